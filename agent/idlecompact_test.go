package agent

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
)

// blockingCompactor records Compact calls and holds each until released.
type blockingCompactor struct {
	archiveRecorder
	entered chan string
	release chan struct{}
	mu      sync.Mutex
	keys    []string
}

func (c *blockingCompactor) Compact(_ context.Context, s *session.Session, keep int) (int, error) {
	c.mu.Lock()
	c.keys = append(c.keys, s.Key)
	c.mu.Unlock()
	c.entered <- s.Key
	<-c.release
	return 2, nil
}

func (c *blockingCompactor) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.keys)
}

// TestIdleCompaction: a conversation left alone is folded once per idle
// spell, as its session's worker: a message that comes during the fold is
// answered after it, and its turn starts a new spell.
func TestIdleCompaction(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("answer") }}
	comp := &blockingCompactor{archiveRecorder: archiveRecorder{archived: map[string]int{}}, entered: make(chan string, 4), release: make(chan struct{})}
	h := newHarness(t, llm, nil, func(c *LoopConfig) { c.Consolidator, c.IdleCompact = comp, 20*time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.loop.CompactWhenIdle(ctx, 5*time.Millisecond); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	h.send("c", "hello")
	waitfor.True(t, "turn", func() bool { return h.doneCount() == 1 })
	var key string
	select {
	case key = <-comp.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the idle conversation was not compacted")
	}
	if key != "test:c" {
		t.Errorf("compacted %q", key)
	}
	// A message during the fold waits for it.
	h.send("c", "are you there?")
	waitfor.True(t, "the message queued behind the fold", func() bool { return h.loop.Queued() == 1 })
	if n := len(llm.reqs()); n != 1 {
		t.Fatalf("a turn ran during the fold: %d model calls", n)
	}
	close(comp.release)
	waitfor.True(t, "answered after the fold", func() bool { return h.doneCount() == 2 })
	// That turn is a new spell: folded again, once.
	select {
	case <-comp.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("not compacted after the second spell")
	}
	waitfor.True(t, "the fold worker retired", func() bool { return h.loop.Idle() })
	h.loop.mu.Lock()
	_, again := h.loop.idle["test:c"]
	h.loop.mu.Unlock()
	if again || comp.calls() != 2 {
		t.Errorf("after a fold with nothing new: recorded idle again %v, %d compactions; want none more, 2", again, comp.calls())
	}
}
