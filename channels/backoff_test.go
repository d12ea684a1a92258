package channels

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
)

func TestBackoff(t *testing.T) {
	lo, hi := 100*time.Millisecond, time.Second
	for n, want := range map[int]time.Duration{1: lo, 2: 2 * lo, 3: 4 * lo, 4: 8 * lo, 5: hi, 50: hi} {
		for range 20 {
			if d := Backoff(n, lo, hi); d < want/2 || d > want {
				t.Fatalf("Backoff(%d) = %s, want within [%s, %s]", n, d, want/2, want)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := SleepBackoff(ctx, 1, time.Hour, time.Hour); err == nil {
		t.Error("SleepBackoff ignored a cancelled context")
	}
}

// DeliverRetrying's result is the acknowledgement decision: nil (taken)
// and ErrDenied acknowledge; anything else does not, and carries why.
func TestDeliverRetryingResult(t *testing.T) {
	failing := errors.New("journal: write failed")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name      string
		ctx       context.Context
		errs      []error // Deliver's answers, in order; then nil
		wantCalls int
		wantIs    []error
		wantNil   bool
	}{
		{name: "taken", ctx: context.Background(), wantCalls: 1, wantNil: true},
		{name: "taken after failures", ctx: context.Background(), errs: []error{failing, failing}, wantCalls: 3, wantNil: true},
		{name: "denied", ctx: context.Background(), errs: []error{ErrDenied}, wantCalls: 1, wantIs: []error{ErrDenied}},
		{name: "given up", ctx: context.Background(), errs: slices.Repeat([]error{failing}, DeliverAttempts+3), wantCalls: DeliverAttempts, wantIs: []error{failing}},
		{name: "ctx ended", ctx: cancelled, errs: []error{context.Canceled}, wantCalls: 1, wantIs: []error{context.Canceled}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			in := InboxFunc(func(context.Context, bus.Inbound) error {
				calls++
				if calls <= len(tc.errs) {
					return tc.errs[calls-1]
				}
				return nil
			})
			err := DeliverRetrying(tc.ctx, in, bus.Inbound{Channel: "tg", MessageID: "m7"}, slog.New(slog.DiscardHandler), time.Microsecond, time.Millisecond)
			if calls != tc.wantCalls {
				t.Errorf("Deliver called %d times, want %d", calls, tc.wantCalls)
			}
			if (err == nil) != tc.wantNil {
				t.Fatalf("err = %v, want nil: %v", err, tc.wantNil)
			}
			for _, want := range tc.wantIs {
				if !errors.Is(err, want) {
					t.Errorf("err = %v, want it to wrap %v", err, want)
				}
			}
			if err != nil && !errors.Is(err, ErrDenied) && !strings.Contains(err.Error(), "m7") {
				t.Errorf("err = %q, want it to name the message", err)
			}
		})
	}
}

type lossInbox struct {
	InboxFunc
	lost []string
}

func (l *lossInbox) CountLost(channel string) { l.lost = append(l.lost, channel) }

func TestReportLostLogsAndCounts(t *testing.T) {
	var logs bytes.Buffer
	in := &lossInbox{InboxFunc: func(context.Context, bus.Inbound) error { return nil }}
	ReportLost(in, bus.Inbound{Channel: "irc", ChatID: "#c", MessageID: "m9"}, errors.New("bus down"), slog.New(slog.NewTextHandler(&logs, nil)))
	if len(in.lost) != 1 || in.lost[0] != "irc" {
		t.Errorf("counted %v, want [irc]", in.lost)
	}
	if got := logs.String(); !strings.Contains(got, "level=ERROR") || !strings.Contains(got, "message_id=m9") || !strings.Contains(got, "bus down") {
		t.Errorf("log %q, want an error naming the message and the cause", got)
	}
}
