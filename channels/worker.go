package channels

import (
	"context"
	"sync"
)

// Work handles the items of queue one after another, in order, on a
// goroutine of its own, until ctx ends or stop is called. stop ends the
// goroutine and waits for it; call it once, before Run returns. Adapters
// use it to keep a platform's events in order while their reader goes on
// reading (and answering pings) when a delivery is slow. Items still
// queued when it stops are dropped: the platform redelivers what was not
// acknowledged.
func Work[T any](ctx context.Context, queue <-chan T, handle func(context.Context, T)) (stop func()) {
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-wctx.Done():
				return
			case v := <-queue:
				handle(wctx, v)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// Publish sets *slot to v while holding mu, so that Send and Run's other
// goroutines see the connection a session just made, and returns withdraw,
// which clears *slot again, under mu, unless a later session replaced v
// meanwhile. A session calls it as `defer channels.Publish(&c.mu, &c.conn,
// k)()`.
func Publish[T comparable](mu *sync.Mutex, slot *T, v T) (withdraw func()) {
	mu.Lock()
	*slot = v
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if *slot == v {
			var zero T
			*slot = zero
		}
	}
}
