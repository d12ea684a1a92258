package channels

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/gateway/bus"
)

// flakyChannel fails its first runs, then runs until ctx ends.
type flakyChannel struct {
	failures int32
	runs     atomic.Int32
	panicky  bool
}

func (f *flakyChannel) Name() string { return "flaky" }
func (f *flakyChannel) Run(ctx context.Context, _ Inbox) error {
	n := f.runs.Add(1)
	if n <= f.failures {
		if f.panicky && n == 1 {
			panic("boom")
		}
		return errors.New("connection refused")
	}
	<-ctx.Done()
	return nil
}
func (f *flakyChannel) Send(context.Context, bus.Outbound) (MessageRef, error) {
	return MessageRef{}, nil
}

func TestManagerRestartsWithBackoff(t *testing.T) {
	fc := &flakyChannel{failures: 3, panicky: true}
	m := NewManager(ManagerConfig{BackoffMin: 10 * time.Millisecond, BackoffMax: 40 * time.Millisecond}, []Channel{fc})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	start := time.Now()
	go func() { _ = m.Run(ctx); close(done) }()

	// While failing, the channel is visibly not ready.
	waitFor(t, "reconnecting state", func() bool {
		h := m.Health()["flaky"]
		return h.State == StateReconnecting && h.LastError != ""
	})
	if ok, bad := m.Ready(); ok || len(bad) != 1 {
		t.Errorf("Ready() = %v %v while reconnecting", ok, bad)
	}
	waitFor(t, "connected after restarts", func() bool {
		return fc.runs.Load() == 4 && m.Health()["flaky"].State == StateConnected
	})
	// Backoff 10, 20, 40 ms with jitter in [d/2, d]: at least 35 ms in all.
	if el := time.Since(start); el < 35*time.Millisecond {
		t.Errorf("three restarts took %v: backoff not applied", el)
	}
	if h := m.Health()["flaky"]; h.Restarts != 3 {
		t.Errorf("restarts = %d, want 3", h.Restarts)
	}
	if ok, _ := m.Ready(); !ok {
		t.Error("not ready after reconnecting")
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if h := m.Health()["flaky"]; h.State != StateStopped {
		t.Errorf("state after stop = %s", h.State)
	}
}
