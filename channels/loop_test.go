package channels

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/waitfor"
)

func redactSecret(err error) string { return strings.ReplaceAll(err.Error(), "s3cret", "***") }

func TestLoopReconnectsAndStops(t *testing.T) {
	var h HealthState
	var sessions atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := &Loop{Name: "x", Health: &h, Redact: redactSecret, Min: time.Millisecond, Max: 2 * time.Millisecond}
	firstState := make(chan State, 1)
	done := make(chan error, 1)
	go func() {
		done <- l.Run(ctx, func(ctx context.Context, up func()) error {
			switch sessions.Add(1) {
			case 1:
				firstState <- h.Get().State
				return errors.New("dial failed with s3cret")
			case 2:
				if st := h.Get(); st.State != StateReconnecting || st.LastError != "dial failed with ***" {
					return Fatal(errors.New("wrong state before the second attempt: " + string(st.State) + " " + st.LastError))
				}
				up()
				return errors.New("socket closed")
			default:
				up()
				<-ctx.Done()
				return ctx.Err()
			}
		})
	}()
	if got := <-firstState; got != StateConnecting {
		t.Errorf("state during the first attempt = %s, want connecting", got)
	}
	waitfor.True(t, "third session connected", func() bool {
		return sessions.Load() >= 3 && h.Get().State == StateConnected
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	if h.Get().State != StateStopped {
		t.Fatalf("state after stop %+v", h.Get())
	}
}

func TestLoopFatalReturnedIntact(t *testing.T) {
	var h HealthState
	l := &Loop{Name: "x", Health: &h, Redact: redactSecret, Min: time.Millisecond}
	n := 0
	cause := errors.New("bad secret s3cret")
	err := l.Run(context.Background(), func(ctx context.Context, up func()) error {
		n++
		if n < 3 {
			return errors.New("transient")
		}
		return Fatal(cause)
	})
	if !IsFatal(err) || !errors.Is(err, cause) || n != 3 {
		t.Fatalf("Run returned %v (fatal %v) after %d sessions, want the fatal error after 3", err, IsFatal(err), n)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("returned error leaks the secret: %v", err)
	}
	if st := h.Get(); st.State != StateFailed || st.LastError != "bad secret ***" {
		t.Fatalf("health %+v, want failed with the redacted reason", st)
	}
}

func TestFatalWrapping(t *testing.T) {
	if Fatal(nil) != nil {
		t.Error("Fatal(nil) is not nil")
	}
	base := errors.New("401")
	f := Fatal(base)
	if Fatal(f) != f {
		t.Error("Fatal wrapped a fatal error twice")
	}
	wrapped := errors.Join(errors.New("context"), f)
	if !IsFatal(wrapped) || IsFatal(base) {
		t.Errorf("IsFatal(wrapped) = %v, IsFatal(base) = %v", IsFatal(wrapped), IsFatal(base))
	}
	if got := (&FatalError{Reason: "token rejected", Err: base}).Error(); got != "token rejected" {
		t.Errorf("Error() = %q, want the reason", got)
	}
}
