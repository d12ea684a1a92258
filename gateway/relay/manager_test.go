package relay

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/internal/redact"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// flakyChannel fails its first runs, then runs until ctx ends.
type flakyChannel struct {
	failures int32
	runs     atomic.Int32
	panicky  bool
	err      error // what a failing run returns (default: connection refused)
}

func (f *flakyChannel) Name() string { return "flaky" }
func (f *flakyChannel) Run(ctx context.Context, _ channels.Inbox) error {
	n := f.runs.Add(1)
	if n <= f.failures {
		if f.panicky && n == 1 {
			panic("boom")
		}
		if f.err != nil {
			return f.err
		}
		return errors.New("connection refused")
	}
	<-ctx.Done()
	return nil
}
func (f *flakyChannel) Send(context.Context, bus.Outbound) (channels.MessageRef, error) {
	return channels.MessageRef{}, nil
}

func TestManagerRestartsWithBackoff(t *testing.T) {
	fc := &flakyChannel{failures: 3, panicky: true}
	m := NewManager(ManagerConfig{BackoffMin: 10 * time.Millisecond, BackoffMax: 40 * time.Millisecond}, []channels.Channel{fc})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	start := time.Now()
	go func() { _ = m.Run(ctx); close(done) }()

	// While failing, the channel is visibly not ready.
	waitfor.True(t, "reconnecting state", func() bool {
		h := m.Health()["flaky"]
		return h.State == channels.StateReconnecting && h.LastError != ""
	})
	if ok, bad := m.Ready(); ok || len(bad) != 1 {
		t.Errorf("Ready() = %v %v while reconnecting", ok, bad)
	}
	waitfor.True(t, "connected after restarts", func() bool {
		return fc.runs.Load() == 4 && m.Health()["flaky"].State == channels.StateConnected
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
	if h := m.Health()["flaky"]; h.State != channels.StateStopped {
		t.Errorf("state after stop = %s", h.State)
	}
}

// TestManagerRedactsHealth: a channel's error that names a URL with its
// key is shown with the key masked (Health feeds /api/status, which
// answers without a credential).
func TestManagerRedactsHealth(t *testing.T) {
	fc := &flakyChannel{failures: 1000, err: errors.New(`Post "https://hook.example/send?code=hook-secret-42": connection refused`)}
	m := NewManager(ManagerConfig{BackoffMin: time.Hour, BackoffMax: time.Hour, Redact: redact.New("hook-secret-42").String}, []channels.Channel{fc})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	var last string
	waitfor.True(t, "the failure in Health", func() bool {
		last = m.Health()["flaky"].LastError
		return last != ""
	})
	if strings.Contains(last, "hook-secret-42") || !strings.Contains(last, redact.Mask) {
		t.Errorf("LastError %q, want the key masked", last)
	}
}

// fatalChannel fails for good on its first runs (fatalRuns of them), then
// runs until ctx ends; it reports its own health like a Loop-based adapter.
type fatalChannel struct {
	fatalRuns int32
	runs      atomic.Int32
	health    channels.HealthState
	release   chan struct{} // closed: connect
}

func (f *fatalChannel) Name() string            { return "fatal" }
func (f *fatalChannel) Health() channels.Health { return f.health.Get() }
func (f *fatalChannel) Run(ctx context.Context, _ channels.Inbox) error {
	l := &channels.Loop{Name: "fatal", Health: &f.health, Min: time.Millisecond}
	return l.Run(ctx, func(ctx context.Context, up func()) error {
		if f.runs.Add(1) <= f.fatalRuns {
			return channels.Fatal(errors.New("fatal: the platform rejected the token"))
		}
		select {
		case <-f.release:
			up()
		case <-ctx.Done():
			return nil
		}
		<-ctx.Done()
		return nil
	})
}
func (f *fatalChannel) Send(context.Context, bus.Outbound) (channels.MessageRef, error) {
	return channels.MessageRef{}, nil
}

func TestManagerDoesNotRestartAFatalChannel(t *testing.T) {
	fatal := &fatalChannel{fatalRuns: 1, release: make(chan struct{})}
	// The flaky channel fails twice: its restarts are the positive event
	// that proves the Manager kept supervising while the fatal one stayed
	// down (its backoff is longer than the flaky one's two restarts).
	flaky := &flakyChannel{failures: 2}
	m := NewManager(ManagerConfig{BackoffMin: 5 * time.Millisecond, BackoffMax: 10 * time.Millisecond}, []channels.Channel{fatal, flaky})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	waitfor.True(t, "fatal channel failed and flaky channel restarted twice", func() bool {
		return m.Health()["fatal"].State == channels.StateFailed && flaky.runs.Load() == 3 && m.Health()["flaky"].State == channels.StateConnected
	})
	if n := fatal.runs.Load(); n != 1 {
		t.Fatalf("fatal channel ran %d times, want 1 (not restarted)", n)
	}
	h := m.Health()["fatal"]
	if h.LastError != "fatal: the platform rejected the token" || h.Restarts != 0 {
		t.Errorf("health = %+v, want the reason and no restarts", h)
	}
	if ok, bad := m.Ready(); ok || len(bad) != 1 || bad[0] != "fatal: failed" {
		t.Errorf("Ready() = %v %v, want the failed channel listed", ok, bad)
	}

	// A reload retries it; this time it connects, and only when the fake
	// platform confirmed is it connected.
	if n := m.RetryFailed(); n != 1 {
		t.Errorf("RetryFailed() = %d, want 1", n)
	}
	waitfor.True(t, "second run connecting", func() bool {
		return fatal.runs.Load() == 2 && m.Health()["fatal"].State == channels.StateConnecting
	})
	close(fatal.release)
	waitfor.True(t, "connected after retry", func() bool { return m.Health()["fatal"].State == channels.StateConnected })
	if h := m.Health()["fatal"]; h.Restarts != 1 || h.LastError != "" {
		t.Errorf("health after retry = %+v, want 1 restart and no error", h)
	}
}

func TestManagerStopsAFailedChannelOnShutdown(t *testing.T) {
	fatal := &fatalChannel{fatalRuns: 5, release: make(chan struct{})}
	m := NewManager(ManagerConfig{}, []channels.Channel{fatal})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = m.Run(ctx); close(done) }()
	waitfor.True(t, "failed", func() bool { return m.Health()["fatal"].State == channels.StateFailed })
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel with a failed channel")
	}
	if h := m.Health()["fatal"]; h.State != channels.StateStopped || h.LastError == "" {
		t.Errorf("health after shutdown = %+v", h)
	}
}
