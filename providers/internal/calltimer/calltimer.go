// Package calltimer bounds one provider call: a request timeout and, for
// streams, an idle timeout that fires when no event arrived for a while.
// Both cancel the call's context with a cause, so the backend can tell its
// own timeouts apart from the caller's cancellation when it classifies the
// error.
//
// Concurrency: a Timer's methods may be called from any goroutine,
// concurrently with each other (a stream's reader Kicks while the caller
// Stops); the two timeouts fire on goroutines of the time package and do
// nothing but cancel the context. Stop may be called more than once.
package calltimer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/providers"
)

// Timer tracks one call. Create it with Start, derive all IO from Context,
// call Kick whenever a stream event arrives, and Stop when the call returns.
type Timer struct {
	parent  context.Context
	ctx     context.Context
	cancel  context.CancelCauseFunc
	request time.Duration
	idle    time.Duration

	mu           sync.Mutex
	requestTimer *time.Timer
	idleTimer    *time.Timer
	stopped      bool
}

// Start begins timing a call. requestTimeout <= 0 means no request bound,
// idleTimeout <= 0 no idle bound (pass 0 for non-streaming calls). For a
// stream the request timeout covers only the wait for the first event;
// after that the idle timeout governs, so a long answer that keeps flowing
// is never cut off.
func Start(parent context.Context, requestTimeout, idleTimeout time.Duration) *Timer {
	t := &Timer{parent: parent, request: requestTimeout, idle: idleTimeout}
	t.ctx, t.cancel = context.WithCancelCause(parent)
	if requestTimeout > 0 {
		t.requestTimer = time.AfterFunc(requestTimeout, func() { t.cancel(providers.ErrRequestTimeout) })
	}
	if idleTimeout > 0 {
		t.idleTimer = time.AfterFunc(idleTimeout, func() { t.cancel(providers.ErrStreamIdle) })
	}
	return t
}

// Context is the context the call must use for its IO.
func (t *Timer) Context() context.Context { return t.ctx }

// Kick records a stream event: it ends the request timeout (the first
// event has arrived) and restarts the idle countdown. Only streams call it.
func (t *Timer) Kick() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	if t.requestTimer != nil {
		t.requestTimer.Stop()
		t.requestTimer = nil
	}
	if t.idleTimer != nil {
		t.idleTimer.Reset(t.idle)
	}
}

// Stop releases the timers and the derived context.
func (t *Timer) Stop() {
	t.mu.Lock()
	t.stopped = true
	if t.requestTimer != nil {
		t.requestTimer.Stop()
	}
	if t.idleTimer != nil {
		t.idleTimer.Stop()
	}
	t.mu.Unlock()
	t.cancel(context.Canceled)
}

// Classify returns the error to report when the call's context ended: the
// caller's own cancellation (never retried), an idle stall or a request
// timeout (both transient). It returns nil while the context is live, so
// the backend classifies the error itself.
func (t *Timer) Classify(provider string) *providers.Error {
	if perr := t.parent.Err(); perr != nil {
		return providers.Canceled(provider, perr)
	}
	if t.ctx.Err() == nil {
		return nil
	}
	switch cause := context.Cause(t.ctx); {
	case errors.Is(cause, providers.ErrStreamIdle):
		return &providers.Error{
			Provider: provider, Transient: true, Err: providers.ErrStreamIdle,
			Message: fmt.Sprintf("stream stalled: no data for %s", t.idle),
		}
	case errors.Is(cause, providers.ErrRequestTimeout):
		return &providers.Error{
			Provider: provider, Transient: true, Err: providers.ErrRequestTimeout,
			Message: fmt.Sprintf("request timed out after %s", t.request),
		}
	default:
		return nil
	}
}
