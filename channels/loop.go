package channels

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"
)

// FatalError is an error no retry can fix: the platform rejected the
// credentials, another client took over the connection, the account was
// logged out. A channel's Run returns it (Loop does so intact); the Manager
// then stops the channel in StateFailed with the reason instead of
// restarting it, until the gateway is reloaded (SIGHUP) or restarted.
type FatalError struct {
	// Reason is what the user is shown (logs, /api/status, nanobot status):
	// free of credentials. Empty means Err's text.
	Reason string
	// Err is the underlying error, for errors.Is / errors.As.
	Err error
}

func (e *FatalError) Error() string {
	if e.Reason != "" {
		return e.Reason
	}
	if e.Err == nil {
		return "fatal channel error"
	}
	return e.Err.Error()
}

func (e *FatalError) Unwrap() error { return e.Err }

// Fatal marks err as not worth retrying. Fatal(nil) is nil.
func Fatal(err error) error {
	if err == nil {
		return nil
	}
	var f *FatalError
	if errors.As(err, &f) {
		return err
	}
	return &FatalError{Err: err}
}

// IsFatal reports whether err is, or wraps, a FatalError.
func IsFatal(err error) bool {
	var f *FatalError
	return errors.As(err, &f)
}

// Loop keeps one platform connection up; every adapter's Run uses one. It
// runs one session after another with jittered exponential backoff between
// failures, reports the connection state through Health (connecting until
// the platform confirmed the first time, then connected, reconnecting with
// the last error, stopped, failed), and returns nil when ctx ends or the
// FatalError a session returned. Run must not be called concurrently on
// one Loop; Lost may be called from any goroutine while Run runs.
type Loop struct {
	// Name prefixes log lines ("dingtalk").
	Name string
	Log  *slog.Logger
	// Health receives the states; the adapter returns Health.Get() from its
	// HealthReporter. Nil reports nothing.
	Health *HealthState
	// Redact cleans an error's text before it is logged, reported or
	// returned (nil: the text as is).
	Redact func(error) string
	// Min and Max bound the wait between attempts (default 1 s and 1 min).
	Min, Max time.Duration
}

// Session is one connection's life: it dials, calls up once the platform
// accepted it (that resets the backoff and reports connected), serves until
// the connection breaks and returns why. It returns a FatalError (see
// Fatal) when retrying cannot help. A session whose library reconnects by
// itself reports the gap with Loop.Lost and calls up again afterwards. up
// may be called from any goroutine while the session runs.
type Session func(ctx context.Context, up func()) error

// Run runs sessions until ctx ends (it then returns nil) or one returns a
// FatalError, which Run returns with its Reason redacted.
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
	l.set(StateConnecting, "")
	failures := 0
	for {
		var wasUp atomic.Bool
		err := session(ctx, func() {
			wasUp.Store(true)
			l.set(StateConnected, "")
		})
		if wasUp.Load() {
			failures = 0
		}
		if ctx.Err() != nil {
			l.set(StateStopped, "")
			return nil
		}
		if err == nil {
			err = errors.New("connection closed")
		}
		msg := l.redact(err)
		if IsFatal(err) {
			l.set(StateFailed, msg)
			return &FatalError{Reason: msg, Err: err}
		}
		failures++
		wait := Backoff(failures, lo, hi)
		if wasUp.Load() {
			log.Warn(l.Name+": connection lost; reconnecting", "err", msg, "in", wait.Round(time.Millisecond))
		} else {
			log.Warn(l.Name+": connecting failed; retrying", "err", msg, "failures", failures, "in", wait.Round(time.Millisecond))
		}
		l.set(StateReconnecting, msg)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			l.set(StateStopped, "")
			return nil
		case <-t.C:
		}
	}
}

// Lost reports that a connection the session's library re-establishes by
// itself went down (err may be nil); the session calls up when it is back.
func (l *Loop) Lost(err error) {
	msg := ""
	if err != nil {
		msg = l.redact(err)
	}
	l.set(StateReconnecting, msg)
}

func (l *Loop) redact(err error) string {
	if l.Redact != nil {
		return l.Redact(err)
	}
	return err.Error()
}

func (l *Loop) set(s State, msg string) {
	if l.Health != nil {
		l.Health.Set(s, msg)
	}
}
