package channeltest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// Recorder is an Inbox for an adapter's own tests: it records every
// delivery and, as a channels.Admitter, turns away the senders Refuse
// names (nil: nobody), as a gate with an allow-list would.
type Recorder struct {
	Refuse func(senderID string) bool

	mu  sync.Mutex
	got []bus.Inbound
}

// Deliver records m.
func (r *Recorder) Deliver(_ context.Context, m bus.Inbound) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, m)
	return nil
}

// Admits implements channels.Admitter.
func (r *Recorder) Admits(_, senderID string) bool { return r.Refuse == nil || !r.Refuse(senderID) }

// All returns the deliveries so far, in order.
func (r *Recorder) All() []bus.Inbound {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]bus.Inbound(nil), r.got...)
}

// Wait returns the first delivery whose content contains text, polling
// for up to 20 s.
func (r *Recorder) Wait(t testing.TB, text string) bus.Inbound {
	t.Helper()
	var got bus.Inbound
	waitfor.Within(t, "inbound "+text, 20*time.Second, func() bool {
		for _, m := range r.All() {
			if strings.Contains(m.Content, text) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

// Start runs ch with in until the test ends, then stops it and checks that
// Run returned nil. It waits until a channels.HealthReporter reports
// connected and returns the context Run got (for Send calls).
func Start(t testing.TB, ch channels.Channel, in channels.Inbox) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, in) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	if hr, ok := ch.(channels.HealthReporter); ok {
		waitfor.Within(t, ch.Name()+" connected", 10*time.Second, func() bool { return hr.Health().State == channels.StateConnected })
	}
	return ctx
}
