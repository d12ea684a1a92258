// Package bustest is the conformance suite every bus implementation
// passes: the in-memory bus and the JetStream natsbus run the same
// tests. It checks what the gateway relies on: every field survives the
// trip, each message arrives exactly once, messages of a session keep their
// order under concurrent publishers, and Close refuses later publishers
// and may be called any number of times, also at once.
package bustest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/bus"
)

// Queue is what the gateway uses of a bus.
type Queue interface {
	PublishInbound(ctx context.Context, m bus.Inbound) error
	PublishOutbound(ctx context.Context, m bus.Outbound) error
	Inbound() <-chan bus.Inbound
	Outbound() <-chan bus.Outbound
	Close()
}

// Impl is an implementation under test.
type Impl struct {
	// New returns a fresh queue whose consumers run (the test closes it).
	New func(t *testing.T) Queue
	// Done and Delivered acknowledge a received message; nil when the
	// implementation has no acknowledgements.
	Done      func(q Queue, m bus.Inbound)
	Delivered func(q Queue, m bus.Outbound)
}

// Run runs the suite.
func Run(t *testing.T, impl Impl) {
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, impl) })
	t.Run("SessionOrder", func(t *testing.T) { testSessionOrder(t, impl) })
	t.Run("CloseRefusesPublishers", func(t *testing.T) { testClose(t, impl) })
	t.Run("ConcurrentClose", func(t *testing.T) { testConcurrentClose(t, impl) })
}

const wait = 20 * time.Second

func recvIn(t *testing.T, q Queue) bus.Inbound {
	t.Helper()
	select {
	case m, ok := <-q.Inbound():
		if !ok {
			t.Fatal("inbound closed")
		}
		return m
	case <-time.After(wait):
		t.Fatal("no inbound message")
	}
	return bus.Inbound{}
}

func recvOut(t *testing.T, q Queue) bus.Outbound {
	t.Helper()
	select {
	case m, ok := <-q.Outbound():
		if !ok {
			t.Fatal("outbound closed")
		}
		return m
	case <-time.After(wait):
		t.Fatal("no outbound message")
	}
	return bus.Outbound{}
}

func testRoundTrip(t *testing.T, impl Impl) {
	q := impl.New(t)
	ctx := context.Background()
	in := bus.Inbound{
		Channel: "telegram", SenderID: "42|alice", ChatID: "-100", Content: "hello\nworld ✓",
		Media:     []bus.Media{{Path: "/tmp/a.jpg", MIMEType: "image/jpeg", Name: "a.jpg", Size: 10}},
		MessageID: "m1", Metadata: bus.Metadata{"thread": "t9", "n": "3", "flag": "true"},
		IsGroup: true, SessionKey: "telegram:-100:topic:7",
		ReceivedAt: time.Date(2026, 5, 1, 10, 0, 0, 123456789, time.UTC),
	}
	if err := q.PublishInbound(ctx, in); err != nil {
		t.Fatal(err)
	}
	got := recvIn(t, q)
	if impl.Done != nil {
		impl.Done(q, got)
	}
	got.ID = ""
	if d := cmp.Diff(in, got); d != "" {
		t.Errorf("inbound changed in transit (-sent +got):\n%s", d)
	}
	out := bus.Outbound{
		Channel: "telegram", ChatID: "-100", Kind: bus.KindStreamEnd, Content: "**done**",
		Media: []bus.Media{{URL: "https://example.invalid/x.png"}}, ReplyTo: "m1", StreamID: "s1",
		Final: true, Metadata: bus.Metadata{"thread": "t9"}, SessionKey: "telegram:-100:topic:7",
	}
	if err := q.PublishOutbound(ctx, out); err != nil {
		t.Fatal(err)
	}
	gotOut := recvOut(t, q)
	if impl.Delivered != nil {
		impl.Delivered(q, gotOut)
	}
	gotOut.ID = ""
	if d := cmp.Diff(out, gotOut); d != "" {
		t.Errorf("outbound changed in transit (-sent +got):\n%s", d)
	}
}

// testSessionOrder publishes from concurrent publishers, one per session,
// and checks that every message arrives once and each session's in order.
func testSessionOrder(t *testing.T, impl Impl) {
	q := impl.New(t)
	ctx := context.Background()
	const sessions, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for s := range sessions {
		wg.Go(func() {
			for i := range each {
				m := bus.Inbound{Channel: "fake", ChatID: fmt.Sprint("chat", s), Content: fmt.Sprint(i), MessageID: fmt.Sprint(s, "-", i)}
				if err := q.PublishInbound(ctx, m); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	next := map[string]int{}
	for range sessions * each {
		m := recvIn(t, q)
		if want := fmt.Sprint(next[m.ChatID]); m.Content != want {
			t.Fatalf("session %s: got message %s, want %s (order broken or duplicate)", m.ChatID, m.Content, want)
		}
		next[m.ChatID]++
		if impl.Done != nil {
			impl.Done(q, m)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	select {
	case m := <-q.Inbound():
		t.Errorf("extra message %+v", m)
	case <-time.After(200 * time.Millisecond):
	}
}

func testClose(t *testing.T, impl Impl) {
	q := impl.New(t)
	ctx := context.Background()
	q.Close()
	if err := q.PublishInbound(ctx, bus.Inbound{Channel: "x", ChatID: "1"}); !errors.Is(err, bus.ErrClosed) {
		t.Errorf("inbound after Close: %v, want ErrClosed", err)
	}
	if err := q.PublishOutbound(ctx, bus.Outbound{Channel: "x", ChatID: "1"}); !errors.Is(err, bus.ErrClosed) {
		t.Errorf("outbound after Close: %v, want ErrClosed", err)
	}
	for _, ch := range []func() bool{
		func() bool { _, ok := <-q.Inbound(); return ok },
		func() bool { _, ok := <-q.Outbound(); return ok },
	} {
		done := make(chan bool, 1)
		go func() { done <- ch() }()
		select {
		case ok := <-done:
			if ok {
				t.Error("receive channel delivered after Close on an empty bus")
			}
		case <-time.After(wait):
			t.Error("receive channel not closed by Close")
		}
	}
	q.Close() // idempotent
}

// testConcurrentClose closes from several goroutines at once (the gateway's
// shutdown and a service's drain may race): none panics, and none returns
// before the bus refuses publishers.
func testConcurrentClose(t *testing.T, impl Impl) {
	for range 20 {
		q := impl.New(t)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				<-start
				q.Close()
				if err := q.PublishInbound(context.Background(), bus.Inbound{Channel: "x", ChatID: "1"}); !errors.Is(err, bus.ErrClosed) {
					t.Errorf("inbound after Close returned: %v, want ErrClosed", err)
				}
			})
		}
		close(start)
		wg.Wait()
		q.Close()
	}
}
