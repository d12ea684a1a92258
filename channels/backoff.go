package channels

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/nanobot-go/nanobot/gateway/bus"
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

// DeliverAttempts is how often DeliverRetrying tries before giving up.
const DeliverAttempts = 5

// DeliverRetrying hands m to in, retrying failures other than a denial
// (a full queue, a journal write error) with backoff between lo and hi, up
// to DeliverAttempts times. It reports whether m was taken; a message given
// up on is logged, and the adapter must leave it unacknowledged so that
// the platform delivers it again where it can. While the gateway cannot
// store messages (ErrUnavailable: disk full) it keeps trying until ctx
// ends, so the message is taken once space is back; the adapter is held
// up meanwhile and acknowledges nothing.
func DeliverRetrying(ctx context.Context, in Inbox, m bus.Inbound, log *slog.Logger, lo, hi time.Duration) bool {
	unavailable := 0
	for attempt := 1; ; attempt++ {
		err := in.Deliver(ctx, m)
		switch {
		case err == nil:
			if unavailable > 0 {
				log.Info(m.Channel+": message taken after the gateway could store again", "chat_id", m.ChatID, "attempts", attempt)
			}
			return true
		case errors.Is(err, ErrDenied), ctx.Err() != nil:
			return false
		case errors.Is(err, ErrUnavailable):
			if unavailable%20 == 0 {
				log.Warn(m.Channel+": the gateway cannot store messages; holding this one until it can", "chat_id", m.ChatID, "err", err)
			}
			unavailable++
			if SleepBackoff(ctx, attempt, lo, hi) != nil {
				return false
			}
			continue
		case attempt >= DeliverAttempts:
			log.Error(m.Channel+": delivering a message failed; given up", "chat_id", m.ChatID, "message_id", m.MessageID, "err", err)
			return false
		}
		log.Warn(m.Channel+": delivering a message failed; retrying", "chat_id", m.ChatID, "err", err, "attempt", attempt)
		if SleepBackoff(ctx, attempt, lo, hi) != nil {
			return false
		}
	}
}
