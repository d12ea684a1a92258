package agent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
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

// blockingArchiver is a Consolidator whose ArchiveAll waits for proceed.
type blockingArchiver struct {
	archiveRecorder
	entered, proceed chan struct{}
	over             atomic.Bool // ArchiveAll has returned
}

func (b *blockingArchiver) ArchiveAll(ctx context.Context, s *session.Session) error {
	b.entered <- struct{}{}
	<-b.proceed
	err := b.archiveRecorder.ArchiveAll(ctx, s)
	b.over.Store(true)
	return err
}

// A message that comes while Reset archives its conversation (the
// consolidation may take a model call of seconds) waits behind it, as
// behind a turn, and is answered in the fresh session: no turn reads or
// writes the session while it is being set aside.
func TestResetHoldsTheSession(t *testing.T) {
	arch := &blockingArchiver{archiveRecorder: archiveRecorder{archived: map[string]int{}}, entered: make(chan struct{}), proceed: make(chan struct{})}
	var duringArchive atomic.Bool
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) {
		if !arch.over.Load() {
			duringArchive.Store(true)
		}
		return text("answer")
	}}
	h := newHarness(t, llm, nil, func(c *LoopConfig) { c.Consolidator = arch })
	ctx := context.Background()
	const key = "test:c"

	h.send("c", "hello")
	waitfor.True(t, "the first turn", func() bool { return h.doneCount() == 1 })
	waitfor.True(t, "the worker gone", func() bool { return h.loop.Idle() })
	duringArchive.Store(false) // the first turn ran before any Reset

	reset := make(chan error, 1)
	go func() { reset <- h.loop.Reset(ctx, key) }()
	<-arch.entered
	h.send("c", "again")
	waitfor.True(t, "the message queued behind Reset (or, wrongly, answered)", func() bool {
		if len(llm.reqs()) == 2 {
			return true
		}
		h.loop.mu.Lock()
		defer h.loop.mu.Unlock()
		w := h.loop.workers[key]
		return w != nil && w.hold != nil && len(w.queue) == 1
	})
	if err := h.loop.Reset(ctx, key); !errors.Is(err, ErrSessionBusy) {
		t.Errorf("a second Reset meanwhile: %v, want ErrSessionBusy", err)
	}
	close(arch.proceed)
	if err := <-reset; err != nil {
		t.Fatalf("Reset: %v", err)
	}
	waitfor.True(t, "the second turn", func() bool { return h.doneCount() == 2 })

	if duringArchive.Load() {
		t.Error("a turn called the model while its session was being archived")
	}
	reqs := llm.reqs()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	for _, m := range reqs[1].Messages {
		if strings.Contains(m.Text(), "hello") {
			t.Errorf("the turn after Reset saw the archived conversation: %q", m.Text())
		}
	}
	if n := arch.archived[key]; n != 2 {
		t.Errorf("the archive holds %d messages, want the first exchange's 2", n)
	}
	s, err := h.store.Load(ctx, key)
	if err != nil || s.Len() != 2 {
		t.Errorf("the fresh session holds %d messages (%v), want the second exchange's 2", s.Len(), err)
	}
}

// archiveFailStore's Archive says it was called (entered), waits for
// proceed, and fails as a full disk does.
type archiveFailStore struct {
	*session.FileStore
	entered, proceed chan struct{}
}

var errDiskFull = errors.New("no space left on device")

func (s archiveFailStore) Archive(context.Context, *session.Session) error {
	close(s.entered)
	<-s.proceed
	return errDiskFull
}

// A Reset that fails (the archive cannot be written, or its context ends)
// says so, and lets go of the session all the same: the message that
// waited behind it is answered, in the conversation as it was, and the
// loop goes idle.
func TestResetFailureLetsGo(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("answer") }}
	h := newHarness(t, llm, nil, nil)
	ctx := context.Background()
	const key = "test:c"
	h.send("c", "hello")
	waitfor.True(t, "the first turn", func() bool { return h.doneCount() == 1 })
	waitfor.True(t, "the worker gone", func() bool { return h.loop.Idle() })

	st := archiveFailStore{FileStore: h.store, entered: make(chan struct{}), proceed: make(chan struct{})}
	h.loop.cfg.Store = st
	reset := make(chan error, 1)
	go func() { reset <- h.loop.Reset(ctx, key) }()
	<-st.entered
	h.send("c", "again")
	waitfor.True(t, "the message queued behind Reset", func() bool {
		h.loop.mu.Lock()
		defer h.loop.mu.Unlock()
		w := h.loop.workers[key]
		return w != nil && w.hold != nil && len(w.queue) == 1
	})
	close(st.proceed)
	if err := <-reset; !errors.Is(err, errDiskFull) {
		t.Fatalf("Reset: %v, want the archive's error", err)
	}
	waitfor.True(t, "the waiting message answered", func() bool { return h.doneCount() == 2 })
	waitfor.True(t, "the loop idle", func() bool { return h.loop.Idle() })
	if s, err := h.store.Load(ctx, key); err != nil || s.Len() != 4 {
		t.Errorf("the session holds %d messages (%v), want both exchanges: nothing was archived", s.Len(), err)
	}

	// A Reset whose context has ended before it loads the session.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	h.loop.cfg.Store = h.store
	_ = h.loop.Reset(cctx, key) // fails or not as the store looks at ctx
	if !h.loop.Idle() {
		t.Error("a Reset that returned left the session's worker behind")
	}
}
