package kit

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/internal/redact"
)

// Loop keeps a platform connection up: it runs one session after another
// with backoff and jitter between failures, reports the state through
// Health, and returns when ctx ends or a session fails for good.
type Loop struct {
	// Name prefixes log lines ("dingtalk").
	Name string
	Log  *slog.Logger
	// Health receives connected / reconnecting / failed / stopped.
	Health *channels.HealthState
	// Redact cleans errors before they are logged or reported.
	Redact *redact.Redactor
	// Min and Max bound the wait between attempts (default 1 s and 1 min).
	Min, Max time.Duration
}

// Session is one connection's life: it dials, calls up once the platform
// accepted it (that resets the backoff and reports connected), serves until
// the connection breaks and returns why. A session ends with a Fatal error
// when retrying cannot help (bad credentials, another client took over).
type Session func(ctx context.Context, up func()) error

// FatalError stops the Loop: the adapter's Run returns it and the channel
// manager decides (it restarts the channel after a long backoff).
type FatalError struct{ Err error }

func (e *FatalError) Error() string { return e.Err.Error() }
func (e *FatalError) Unwrap() error { return e.Err }

// Fatal marks err as not worth retrying.
func Fatal(err error) error { return &FatalError{Err: err} }

// Run runs sessions until ctx ends (it then returns nil) or one returns a
// FatalError (returned, redacted).
func (l *Loop) Run(ctx context.Context, session Session) error {
	lo, hi := l.Min, l.Max
	if lo <= 0 {
		lo = time.Second
	}
	if hi <= 0 {
		hi = time.Minute
	}
	log := l.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	failures := 0
	for {
		wasUp := false
		err := session(ctx, func() {
			wasUp = true
			failures = 0
			l.set(channels.StateConnected, "")
		})
		if ctx.Err() != nil {
			l.set(channels.StateStopped, "")
			return nil
		}
		if err == nil {
			err = errors.New("connection closed")
		}
		msg := l.Redact.Error(err)
		var fatal *FatalError
		if errors.As(err, &fatal) {
			log.Error(l.Name+": giving up on the connection", "err", msg)
			l.set(channels.StateFailed, msg)
			return errors.New(msg)
		}
		failures++
		wait := channels.Backoff(failures, lo, hi)
		if wasUp {
			log.Warn(l.Name+": connection lost; reconnecting", "err", msg, "in", wait.Round(time.Millisecond))
		} else {
			log.Warn(l.Name+": connecting failed; retrying", "err", msg, "failures", failures, "in", wait.Round(time.Millisecond))
		}
		l.set(channels.StateReconnecting, msg)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			l.set(channels.StateStopped, "")
			return nil
		case <-t.C:
		}
	}
}

func (l *Loop) set(s channels.State, msg string) {
	if l.Health != nil {
		l.Health.Set(s, msg)
	}
}
