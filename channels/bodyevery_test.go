package channels

import (
	"context"
	"testing"
	"time"
)

func TestEveryStopsWhenFnSaysSo(t *testing.T) {
	calls := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(t.Context(), time.Millisecond, func() bool {
			calls++
			return calls < 3
		})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not return after fn returned false")
	}
	if calls != 3 {
		t.Errorf("fn called %d times, want 3", calls)
	}
}

func TestEveryStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	called := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Every(ctx, time.Millisecond, func() bool {
			select {
			case called <- struct{}{}:
			default:
			}
			return true
		})
	}()
	<-called // it runs; now end it from outside
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not return after ctx ended")
	}
}
