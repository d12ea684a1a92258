package bus

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

func TestKey(t *testing.T) {
	m := Inbound{Channel: "telegram", ChatID: "42"}
	if m.Key() != "telegram:42" {
		t.Errorf("Key() = %q", m.Key())
	}
	m.SessionKey = "slack:C1:thread:9"
	if m.Key() != "slack:C1:thread:9" {
		t.Errorf("override Key() = %q", m.Key())
	}
}

func TestOrderAndBackPressure(t *testing.T) {
	b := New(2, 2)
	defer b.Close()
	ctx := context.Background()
	for i := range 2 {
		if err := b.PublishInbound(ctx, Inbound{Content: string(rune('a' + i))}); err != nil {
			t.Fatal(err)
		}
	}
	// The queue is full: a publish with a deadline gives up with ctx's error.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := b.PublishInbound(short, Inbound{Content: "c"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("full queue: got %v, want deadline exceeded", err)
	}
	// A blocked publisher proceeds once the consumer makes room.
	done := make(chan error, 1)
	go func() { done <- b.PublishInbound(ctx, Inbound{Content: "c"}) }()
	if got := (<-b.Inbound()).Content; got != "a" {
		t.Errorf("first = %q", got)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"b", "c"} {
		if got := (<-b.Inbound()).Content; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

func TestCloseWakesPublishersAndDrains(t *testing.T) {
	b := New(1, 1)
	ctx := context.Background()
	if err := b.PublishOutbound(ctx, Outbound{Content: "queued"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 {
		wg.Go(func() { errs <- b.PublishOutbound(ctx, Outbound{Content: "blocked"}) })
	}
	// Whether the publishers are already blocked or not yet started, each
	// must end with ErrClosed.
	b.Close()
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("blocked publisher: %v, want ErrClosed", err)
		}
	}
	if m, ok := <-b.Outbound(); !ok || m.Content != "queued" {
		t.Errorf("queued message lost: %v %v", m, ok)
	}
	if _, ok := <-b.Outbound(); ok {
		t.Error("outbound not closed after drain")
	}
	if err := b.PublishInbound(ctx, Inbound{}); !errors.Is(err, ErrClosed) {
		t.Errorf("publish after close: %v", err)
	}
	b.Close() // idempotent
}

func BenchmarkPublishConsume(b *testing.B) {
	bus := New(1024, 1024)
	ctx := context.Background()
	done := make(chan struct{})
	go func() {
		for range bus.Inbound() {
		}
		close(done)
	}()
	m := Inbound{Channel: "telegram", ChatID: "1", Content: "hello"}
	b.ReportAllocs()
	for b.Loop() {
		if err := bus.PublishInbound(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
	bus.Close()
	<-done
}

// A queue takes memory for what it holds, not for its bound: a bus that
// may hold a million messages costs next to nothing while empty.
func TestBoundCostsNothingWhileEmpty(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b := New(1<<20, 1<<20)
	runtime.ReadMemStats(&after)
	defer b.Close()
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<10 {
		t.Errorf("New(1<<20, 1<<20) allocated %d bytes, want under 64 KiB", got)
	}
}

// Messages keep their order while the queue fills, is partly drained and
// fills again (the held slice is reused and grown), and Depth follows.
func TestOrderAcrossGrowth(t *testing.T) {
	b := New(100, 1)
	defer b.Close()
	ctx := context.Background()
	next, want := 0, 0
	publish := func(n int) {
		t.Helper()
		for range n {
			if err := b.PublishInbound(ctx, Inbound{Content: strconv.Itoa(next)}); err != nil {
				t.Fatal(err)
			}
			next++
		}
	}
	receive := func(n int) {
		t.Helper()
		for range n {
			if got := (<-b.Inbound()).Content; got != strconv.Itoa(want) {
				t.Fatalf("received %q, want %d", got, want)
			}
			want++
		}
	}
	depth := func(w int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			in, _ := b.Depth()
			if in == w {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("Depth = %d, want %d", in, w)
			}
			time.Sleep(time.Millisecond)
		}
	}
	publish(100)
	depth(100)
	receive(30)
	publish(30)
	depth(100)
	receive(100)
	depth(0)
	publish(70)
	receive(70)
	depth(0)
}

// Close may race with itself (a service's drain and the gateway's
// shutdown): closing the bus's channels twice would panic.
func TestCloseConcurrently(t *testing.T) {
	for range 2000 {
		b := New(1, 1)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() { <-start; b.Close() })
		}
		close(start)
		wg.Wait()
		if err := b.PublishInbound(context.Background(), Inbound{}); !errors.Is(err, ErrClosed) {
			t.Fatalf("publish after Close: %v, want ErrClosed", err)
		}
	}
}
