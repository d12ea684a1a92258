package channels

import (
	"context"
	"time"
)

// Every calls fn every d, the first time d after it is called, until ctx
// ends or fn returns false; it blocks until then. It is the keep-alive and
// retry-now-and-then loop of a connection's helper goroutine.
func Every(ctx context.Context, d time.Duration, fn func() bool) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if !fn() {
				return
			}
		}
	}
}
