package agent

import (
	"fmt"
	"testing"

	"github.com/nanobot-go/nanobot/providers"
)

// What the loop remembers per chat lasts while the chat has a worker: after
// many chats spoke once and went quiet, nothing of them is left.
func TestLoopForgetsQuietChats(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("ok") }}
	h := newHarness(t, llm, nil, nil)
	const chats = 200
	for i := range chats {
		h.send(fmt.Sprint("c", i), "hello")
	}
	waitUntil(t, "every chat answered and its worker gone", func() bool { return h.doneCount() == chats && h.loop.Idle() })
	h.loop.mu.Lock()
	defer h.loop.mu.Unlock()
	if n, q := len(h.loop.workers), len(h.loop.queueChoices); n != 0 || q != 0 {
		t.Errorf("after %d quiet chats: %d workers, %d remembered queue choices; want 0 and 0", chats, n, q)
	}
}
