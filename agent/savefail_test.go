package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
)

// flakyStore fails Append with ENOSPC while failing is above zero.
type flakyStore struct {
	SessionStore
	mu      sync.Mutex
	failing int
	tries   int
}

func (f *flakyStore) Append(ctx context.Context, s *session.Session, msgs ...providers.Message) error {
	f.mu.Lock()
	f.tries++
	fail := f.failing > 0
	if fail {
		f.failing--
	}
	f.mu.Unlock()
	if fail {
		return fmt.Errorf("session: append: %w", syscall.ENOSPC)
	}
	return f.SessionStore.Append(ctx, s, msgs...)
}

// A turn whose save fails for a moment (a full disk) is saved once the
// store takes writes again: the user's answer is in the session.
func TestTurnSavedAfterStoreRecovers(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("the answer") }}
	var fs *flakyStore
	h := newHarness(t, llm, nil, func(c *LoopConfig) {
		fs = &flakyStore{SessionStore: c.Store, failing: 2}
		c.Store = fs
	})
	h.send("c", "question")
	waitfor.True(t, "the turn", func() bool { return h.doneCount() == 1 })
	s, err := h.store.Load(context.Background(), "test:c")
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 2 {
		t.Errorf("session holds %d messages, want the turn's 2", s.Len())
	}
	for _, m := range h.out.all() {
		if m.IsError {
			t.Errorf("error reply sent: %q", m.Content)
		}
	}
}

// A turn that cannot be saved within SaveRetry ends with ErrNotSaved, so
// the gateway leaves it for replay; the user, who has the answer, gets no
// error reply on top of it.
func TestTurnNotSavedIsReportedNotApologised(t *testing.T) {
	llm := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("the answer") }}
	var errs []error
	var mu sync.Mutex
	h := newHarness(t, llm, nil, func(c *LoopConfig) {
		c.Store = &flakyStore{SessionStore: c.Store, failing: 1 << 30}
		c.SaveRetry = 300 * time.Millisecond
		c.OnTurnDone = func(_ bus.Inbound, err error) {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	})
	h.send("c", "question")
	waitfor.True(t, "the turn", func() bool { mu.Lock(); defer mu.Unlock(); return len(errs) == 1 })
	if !errors.Is(errs[0], ErrNotSaved) || !errors.Is(errs[0], syscall.ENOSPC) {
		t.Errorf("OnTurnDone got %v, want ErrNotSaved wrapping ENOSPC", errs[0])
	}
	var finals []string
	for _, m := range h.out.all() {
		if m.Final {
			finals = append(finals, m.Content)
		}
	}
	if len(finals) != 1 || finals[0] != "the answer" {
		t.Errorf("final replies %q, want only the answer", finals)
	}
}
