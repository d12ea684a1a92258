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

// TestSessionTTL: a message after the conversation rested past its time
// to live starts a new one, the old one archived to memory first; within
// it, the conversation goes on.
func TestSessionTTL(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("answer") }}
	rec := &archiveRecorder{archived: map[string]int{}}
	h := newHarness(t, llm, nil, func(c *LoopConfig) { c.Consolidator, c.SessionTTL = rec, time.Hour })
	h.send("c", "first")
	waitfor.True(t, "turn", func() bool { return h.doneCount() == 1 })
	h.send("c", "second, soon after")
	waitfor.True(t, "turn", func() bool { return h.doneCount() == 2 })
	sess, err := h.store.Load(context.Background(), "test:c")
	if err != nil {
		t.Fatal(err)
	}
	if sess.Len() != 4 || len(rec.archived) != 0 {
		t.Fatalf("within the time to live: %d messages, archived %v; want 4 and nothing", sess.Len(), rec.archived)
	}
	sess.UpdatedAt = time.Now().Add(-2 * time.Hour) // two hours of quiet
	h.send("c", "third, the next day")
	waitfor.True(t, "turn", func() bool { return h.doneCount() == 3 })
	sess, _ = h.store.Load(context.Background(), "test:c")
	rec.mu.Lock()
	archived := rec.archived["test:c"]
	rec.mu.Unlock()
	if archived != 4 || sess.Len() != 2 || sess.Messages[0].Text() == "first" {
		t.Errorf("after the time to live: archived %d messages, now %d (first %q); want 4 archived and a new conversation of 2",
			archived, sess.Len(), sess.Messages[0].Text())
	}
}
