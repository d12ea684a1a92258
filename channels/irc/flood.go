package irc

import (
	"context"
	"sync"
	"time"
)

// bucket is the flood control every line the bot sends after registering
// waits on: a token bucket holding up to burst tokens, refilled one per
// every. Servers disconnect clients that send faster ("Excess Flood").
// Safe for concurrent use; waiters are served in no particular order.
type bucket struct {
	burst float64
	every time.Duration

	mu     sync.Mutex
	tokens float64
	last   time.Time
}

func newBucket(burst int, every time.Duration) *bucket {
	return &bucket{burst: float64(burst), every: every, tokens: float64(burst), last: time.Now()}
}

// refill adds the tokens earned since last. Caller holds mu.
func (b *bucket) refill(now time.Time) {
	if b.every <= 0 {
		b.tokens = b.burst
	} else if d := now.Sub(b.last); d > 0 {
		b.tokens = min(b.burst, b.tokens+float64(d)/float64(b.every))
	}
	b.last = now
}

// take waits for a token, or returns ctx's error when ctx ends first.
func (b *bucket) take(ctx context.Context) error {
	for {
		b.mu.Lock()
		b.refill(time.Now())
		if b.tokens >= 1 {
			b.tokens--
			b.mu.Unlock()
			return nil
		}
		wait := time.Duration((1 - b.tokens) * float64(b.every))
		b.mu.Unlock()
		t := time.NewTimer(max(wait, time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// tryTake takes a token if one is there, without waiting.
func (b *bucket) tryTake() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(time.Now())
	if b.tokens >= 1 {
		b.tokens--
		return true
	}
	return false
}
