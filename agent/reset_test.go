package agent

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

// archiveRecorder is a Consolidator that records what ArchiveAll saw.
type archiveRecorder struct {
	mu       sync.Mutex
	archived map[string]int // session key -> messages it held
}

func (a *archiveRecorder) MaybeConsolidate(context.Context, *session.Session) error { return nil }
func (a *archiveRecorder) Compact(context.Context, *session.Session, int) (int, error) {
	return 0, nil
}
func (a *archiveRecorder) ArchiveAll(_ context.Context, s *session.Session) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.archived[s.Key] = s.Len()
	return nil
}

// TestReset: Reset is /new from outside the chat: refused while the
// session's turn runs, then consolidation sees the whole conversation
// before the session is archived.
func TestReset(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	llm := &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		started <- struct{}{}
		<-release
		return text("answer")
	}}
	rec := &archiveRecorder{archived: map[string]int{}}
	h := newHarness(t, llm, nil, func(c *LoopConfig) { c.Consolidator = rec })
	ctx := context.Background()

	h.send("c", "hello")
	<-started
	if err := h.loop.Reset(ctx, "test:c"); !errors.Is(err, ErrSessionBusy) {
		t.Fatalf("Reset during a turn: %v, want ErrSessionBusy", err)
	}
	close(release)
	waitfor.True(t, "the turn", func() bool { return h.doneCount() == 1 })
	waitfor.True(t, "the worker gone", func() bool {
		h.loop.mu.Lock()
		defer h.loop.mu.Unlock()
		return len(h.loop.workers) == 0
	})

	if err := h.loop.Reset(ctx, "test:c"); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	rec.mu.Lock()
	n, ok := rec.archived["test:c"]
	rec.mu.Unlock()
	if !ok || n != 2 {
		t.Errorf("ArchiveAll saw %d messages (called %v), want the turn's 2", n, ok)
	}
	s, err := h.store.Load(ctx, "test:c")
	if err != nil || s.Len() != 0 {
		t.Errorf("after Reset the session holds %d messages (%v), want 0", s.Len(), err)
	}
}

// ctxRecorder is a Consolidator that records the call context ArchiveAll
// was charged to.
type ctxRecorder struct {
	archiveRecorder
	cc chan tools.CallContext
}

func (r *ctxRecorder) ArchiveAll(ctx context.Context, _ *session.Session) error {
	cc, _ := tools.CallContextFrom(ctx)
	r.cc <- cc
	return nil
}

// A session remembers the channel and chat its turns came from: a key
// with more after the chat (a Telegram topic) cannot be split back, so
// Reset charged its consolidation to chat "42:topic:7".
func TestSessionOriginRecorded(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("answer") }}
	rec := &ctxRecorder{cc: make(chan tools.CallContext, 1)}
	h := newHarness(t, llm, nil, func(c *LoopConfig) { c.Consolidator = rec })
	ctx := context.Background()
	const key = "telegram:42:topic:7"
	h.loop.Submit(ctx, bus.Inbound{Channel: "telegram", ChatID: "42", SenderID: "u", Content: "hi", MessageID: "1", SessionKey: key})
	waitfor.True(t, "the turn", func() bool { return h.doneCount() == 1 })
	waitfor.True(t, "the worker gone", func() bool {
		h.loop.mu.Lock()
		defer h.loop.mu.Unlock()
		return len(h.loop.workers) == 0
	})
	s, err := h.store.Load(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if ch, chat := s.Origin(); ch != "telegram" || chat != "42" {
		t.Errorf("Origin() = %q %q, want telegram 42", ch, chat)
	}
	if err := h.loop.Reset(ctx, key); err != nil {
		t.Fatal(err)
	}
	if cc := <-rec.cc; cc.Channel != "telegram" || cc.ChatID != "42" || cc.SessionKey != key {
		t.Errorf("consolidation charged to %+v, want telegram 42", cc)
	}
	// Written before origins were recorded: read from the key.
	old := &session.Session{Key: "slack:C1"}
	if ch, chat := old.Origin(); ch != "slack" || chat != "C1" {
		t.Errorf("old session Origin() = %q %q", ch, chat)
	}
}
