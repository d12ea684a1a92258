package channels

import (
	"context"
	"slices"
	"sync"
	"testing"
)

func TestWorkKeepsOrderAndStops(t *testing.T) {
	queue := make(chan int, 10)
	var mu sync.Mutex
	var got []int
	handled := make(chan struct{}, 10)
	stop := Work(t.Context(), queue, func(ctx context.Context, v int) {
		mu.Lock()
		got = append(got, v)
		mu.Unlock()
		handled <- struct{}{}
	})
	for i := range 5 {
		queue <- i
	}
	for range 5 {
		<-handled
	}
	stop() // returns only once the goroutine ended
	mu.Lock()
	defer mu.Unlock()
	if want := []int{0, 1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("handled %v, want %v in order", got, want)
	}
}

func TestWorkStopsWithCtx(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	stop := Work(ctx, make(chan int, 1), func(ctx context.Context, _ int) {})
	cancel()
	stop() // must not block: the goroutine ended with ctx
}

func TestPublish(t *testing.T) {
	var mu sync.Mutex
	var live *int
	a, b := new(int), new(int)
	withdrawA := Publish(&mu, &live, a)
	if live != a {
		t.Fatal("Publish did not set the slot")
	}
	withdrawB := Publish(&mu, &live, b) // a later session took over
	withdrawA()
	if live != b {
		t.Fatal("withdrawing an older value cleared the newer one")
	}
	withdrawB()
	if live != nil {
		t.Fatal("withdraw did not clear its own value")
	}
}
