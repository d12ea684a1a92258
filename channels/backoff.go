package channels

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is how long to wait after the n-th consecutive failure (n ≥ 1):
// lo doubling per failure up to hi, then jittered to between half and all
// of it, so that many clients failing together do not retry together.
func Backoff(n int, lo, hi time.Duration) time.Duration {
	d := lo
	for i := 1; i < n && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	return d/2 + time.Duration(rand.Int64N(int64(d)/2+1))
}

// SleepBackoff waits Backoff(n, lo, hi), or until ctx ends (then it returns
// ctx.Err()). Adapters use it between reconnects and delivery retries.
func SleepBackoff(ctx context.Context, n int, lo, hi time.Duration) error {
	t := time.NewTimer(Backoff(n, lo, hi))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
