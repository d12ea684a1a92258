package channels

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/nanobot-go/nanobot/bus"
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

// DeliverRetrying hands m to in, retrying failures other than a denial (a
// journal write error, a bus that is briefly unreachable) with backoff
// between lo and hi, up to DeliverAttempts times. While the gateway cannot
// store messages at all (ErrUnavailable: disk full, cluster bus down) it
// keeps trying until ctx ends, so the message is taken once the gateway can
// store again; the adapter is held up meanwhile.
//
// The result decides the platform acknowledgement, and every caller must
// branch on it (a test in this package fails on a call whose result is
// dropped):
//
//   - nil: the gateway took m; acknowledge it.
//   - an error wrapping ErrDenied: the sender is not allowed; acknowledge
//     it (it is not retried).
//   - any other error: m was not taken (the attempts were used up, or ctx
//     ended). Do not acknowledge it: leave it for the platform to deliver
//     again (no ack, a nak, a reconnect that does not move past it). Where
//     the platform cannot deliver it again, call ReportLost.
//
// Retries are logged here; the final outcome is the caller's to log, since
// only the caller knows whether the platform will offer m again.
func DeliverRetrying(ctx context.Context, in Inbox, m bus.Inbound, log *slog.Logger, lo, hi time.Duration) error {
	unavailable := 0
	for attempt := 1; ; attempt++ {
		err := in.Deliver(ctx, m)
		switch {
		case err == nil:
			if unavailable > 0 {
				log.Info(m.Channel+": message taken after the gateway could store again", "chat_id", m.ChatID, "attempts", attempt)
			}
			return nil
		case errors.Is(err, ErrDenied):
			return err
		case ctx.Err() != nil:
			return fmt.Errorf("%s: message %s not taken: %w", m.Channel, m.MessageID, errors.Join(ctx.Err(), err))
		case errors.Is(err, ErrUnavailable):
			if unavailable%20 == 0 {
				log.Warn(m.Channel+": the gateway cannot store messages; holding this one until it can", "chat_id", m.ChatID, "message_id", m.MessageID, "err", err)
			}
			unavailable++
			if serr := SleepBackoff(ctx, attempt, lo, hi); serr != nil {
				return fmt.Errorf("%s: message %s not taken: %w", m.Channel, m.MessageID, errors.Join(serr, err))
			}
			continue
		case attempt >= DeliverAttempts:
			return fmt.Errorf("%s: message %s not taken after %d attempts: %w", m.Channel, m.MessageID, attempt, err)
		}
		log.Warn(m.Channel+": delivering a message failed; retrying", "chat_id", m.ChatID, "message_id", m.MessageID, "err", err, "attempt", attempt)
		if serr := SleepBackoff(ctx, attempt, lo, hi); serr != nil {
			return fmt.Errorf("%s: message %s not taken: %w", m.Channel, m.MessageID, errors.Join(serr, err))
		}
	}
}

// LossCounter is an Inbox that counts messages lost on their way in (the
// gateway's counts them in nanobot_inbound_messages_total{outcome="lost"}).
// ReportLost finds it by type assertion, like Admitter.
type LossCounter interface {
	// CountLost counts one message of channel that is lost.
	CountLost(channel string)
}

// ReportLost records that m is lost: the gateway did not take it (err, from
// DeliverRetrying) and m's platform has no way to offer it again (no
// acknowledgement to withhold: IRC, a websocket event stream). It logs at
// error with the message id, so that an operator can find what the sender
// wrote, and counts it when in is a LossCounter. Adapters whose platform
// redelivers leave the message unacknowledged instead.
func ReportLost(in Inbox, m bus.Inbound, err error, log *slog.Logger) {
	log.Error(m.Channel+": the gateway did not take a message and the platform cannot deliver it again; it is lost",
		"chat_id", m.ChatID, "message_id", m.MessageID, "sender_id", m.SenderID, "err", err)
	if lc, ok := in.(LossCounter); ok {
		lc.CountLost(m.Channel)
	}
}
