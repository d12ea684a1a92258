package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
)

// conflictStore fails every Append with session.ErrConflict, as the NATS
// session store does when another worker took the session over.
type conflictStore struct{ *session.FileStore }

func (c conflictStore) Append(context.Context, *session.Session, ...providers.Message) error {
	return session.ErrConflict
}

// A worker whose session moved to another worker (its save is refused)
// must not tell the user that something went wrong: the new owner answers.
func TestSessionMovedNoFailureReply(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("hello") }}
	var doneErr error
	h := newHarness(t, llm, nil, nil)
	h.loop.cfg.Store = conflictStore{h.store}
	h.loop.cfg.OnTurnDone = func(_ bus.Inbound, err error) {
		h.mu.Lock()
		doneErr = err
		h.done = append(h.done, bus.Inbound{})
		h.mu.Unlock()
	}
	h.send("c", "hi")
	waitfor.True(t, "turn done", func() bool { return h.doneCount() == 1 })
	h.mu.Lock()
	defer h.mu.Unlock()
	if !errors.Is(doneErr, session.ErrConflict) {
		t.Errorf("turn ended with %v, want ErrConflict", doneErr)
	}
	for _, m := range h.out.all() {
		if m.IsError {
			t.Errorf("failure reply sent: %q", m.Content)
		}
	}
}

// maxHistory survives a trip through a JSON queue, also in the shape older
// versions wrote (a Metadata key, a float64 after decoding).
func TestMaxHistoryFromJSONQueue(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("ok") }}
	h := newHarness(t, llm, nil, nil)
	for _, m := range []string{"one", "two", "three"} {
		h.send("c", m)
	}
	waitfor.True(t, "three turns", func() bool { return h.doneCount() == 3 })
	var m bus.Inbound
	if err := json.Unmarshal([]byte(`{"channel":"test","chatId":"c","senderId":"u","content":"four","metadata":{"maxHistory":2}}`), &m); err != nil {
		t.Fatal(err)
	}
	h.loop.Submit(context.Background(), m)
	waitfor.True(t, "fourth turn", func() bool { return h.doneCount() == 4 })
	reqs := llm.reqs()
	last := reqs[len(reqs)-1]
	// system + the last 2 stored messages (user three, assistant ok) + the new user message
	if got := len(last.Messages); got != 4 {
		t.Errorf("request has %d messages, want 4 (maxHistory 2 applied)", got)
	}
}

// A message Admit refuses is not run: it goes back to the inbox with
// ErrHandedBack, and the session's next message still runs.
func TestAdmitRefusedMessageIsHandedBack(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("ok") }}
	errs := map[string]error{}
	h := newHarness(t, llm, nil, func(c *LoopConfig) {
		c.Admit = func(m bus.Inbound) bool { return m.Content != "wait" }
	})
	h.loop.cfg.OnTurnDone = func(m bus.Inbound, err error) {
		h.mu.Lock()
		errs[m.Content] = err
		h.done = append(h.done, m)
		h.mu.Unlock()
	}
	h.send("c", "wait")
	h.send("c", "go")
	waitfor.True(t, "both handled", func() bool { return h.doneCount() == 2 })
	h.mu.Lock()
	defer h.mu.Unlock()
	if !errors.Is(errs["wait"], ErrHandedBack) || errs["go"] != nil {
		t.Fatalf("turn errors = %v", errs)
	}
	for _, r := range llm.reqs() {
		if lastUser(r) == "wait" || strings.Contains(lastUser(r), "wait") {
			t.Fatal("the refused message reached the model")
		}
	}
	if n := len(llm.reqs()); n != 1 {
		t.Fatalf("%d model calls, want 1", n)
	}
}
