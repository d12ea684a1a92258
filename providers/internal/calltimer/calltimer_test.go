package calltimer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/providers"
)

func waitDone(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("context not cancelled within 5s")
	}
}

func TestRequestTimeout(t *testing.T) {
	tm := Start(t.Context(), 20*time.Millisecond, 0)
	defer tm.Stop()
	waitDone(t, tm.Context())
	if e := tm.Classify("p"); e == nil || !errors.Is(e, providers.ErrRequestTimeout) || !e.Transient {
		t.Fatalf("Classify = %v", e)
	}
}

func TestKickEndsRequestTimeoutEvenWithoutIdle(t *testing.T) {
	tm := Start(t.Context(), 30*time.Millisecond, 0)
	defer tm.Stop()
	tm.Kick()
	select {
	case <-tm.Context().Done():
		t.Fatal("request timeout fired after the first event")
	case <-time.After(100 * time.Millisecond):
	}
}

func TestIdleTimeout(t *testing.T) {
	tm := Start(t.Context(), 0, 30*time.Millisecond)
	defer tm.Stop()
	waitDone(t, tm.Context())
	if e := tm.Classify("p"); e == nil || !errors.Is(e, providers.ErrStreamIdle) {
		t.Fatalf("Classify = %v", e)
	}
}

func TestCallerCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	tm := Start(ctx, time.Minute, time.Minute)
	defer tm.Stop()
	cancel()
	waitDone(t, tm.Context())
	e := tm.Classify("p")
	if e == nil || e.Transient || !errors.Is(e, context.Canceled) {
		t.Fatalf("Classify = %v", e)
	}
}

func TestLiveContext(t *testing.T) {
	tm := Start(t.Context(), time.Minute, time.Minute)
	defer tm.Stop()
	if e := tm.Classify("p"); e != nil {
		t.Fatalf("Classify on a live call = %v", e)
	}
}
