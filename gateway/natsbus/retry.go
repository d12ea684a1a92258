package natsbus

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// MaxRetry bounds how long an operation is retried while NATS is
// unreachable (a server restart, a leader election).
const MaxRetry = 30 * time.Second

// IsTransient reports whether err is NATS being briefly unreachable (a
// timeout, no JetStream responders during a restart), worth retrying.
func IsTransient(err error) bool {
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		errors.Is(err, nats.ErrReconnectBufExceeded)
}

// IsUnreachable is IsTransient without context deadlines: errors that
// come from NATS itself, never from a slow model or tool.
func IsUnreachable(err error) bool {
	return IsTransient(err) && !errors.Is(err, context.DeadlineExceeded)
}

// attemptTimeout bounds one attempt of Retry: a request sent while the
// connection was reconnecting can lose its reply, and waiting for it would
// hold the caller (a turn's Done, and with it the gateway's shutdown) for
// the whole of MaxRetry.
const attemptTimeout = 5 * time.Second

// Retry runs op until it succeeds, fails for good, ctx ends or MaxRetry
// passed, waiting with jittered backoff between transient failures. Each
// attempt gets at most attemptTimeout.
func Retry(ctx context.Context, op func(ctx context.Context) error) error {
	deadline := time.Now().Add(MaxRetry)
	wait := 50 * time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := op(actx)
		cancel()
		if err == nil || !IsTransient(err) || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		sleep(ctx, jitter(wait))
		wait = min(wait*2, 2*time.Second)
	}
}
