package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/gateway/journal"
	"github.com/nanobot-go/nanobot/gateway/natsbus"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/internal/wal/waltest"
)

// Disk full while a message comes in: the platform is not acknowledged
// (it offers the message again), the sender is told once, /readyz says why
// it is not ready; once space is back the same message is taken and
// answered without a restart, /readyz recovers, and the journal on disk
// reads back intact (the torn writes did not swallow the next record).
func TestDiskFullHoldsMessageTellsSenderOnceAndRecovers(t *testing.T) {
	var disk waltest.Disk
	fc := newFake("fake")
	fc.redeliver = true
	fc.front = make(chan bus.Inbound, 4)
	r := startGatewayOpts(t, testConfig(map[string][]any{"fake": {"*"}}), &echoLLM{}, func(o *Options) { o.StorageOpen = disk.Open }, fc)

	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c1", SenderID: "u", Content: "first", MessageID: "1"}
	waitfor.True(t, "first reply", func() bool { return len(fc.texts("c1")) == 1 })

	disk.SetFull(true)
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c1", SenderID: "u", Content: "second", MessageID: "2"}
	waitfor.True(t, "several failed writes", func() bool { return disk.Failures() >= 6 })
	waitfor.True(t, "the storage notice", func() bool { return len(fc.texts("c1")) == 2 })
	if got := fc.texts("c1")[1]; !strings.Contains(got, "can't store new messages") {
		t.Errorf("notice %q", got)
	}
	code, body := get(t, "http://"+r.addr+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "storage: inbox:") || !strings.Contains(body, "no space left") {
		t.Errorf("/readyz while the disk is full: %d %q", code, body)
	}
	// More attempts of the same message do not repeat the notice.
	n := disk.Failures()
	waitfor.True(t, "more attempts", func() bool { return disk.Failures() >= n+4 })
	if got := len(fc.texts("c1")); got != 2 {
		t.Errorf("%d messages in the chat, want the first reply and one notice", got)
	}

	disk.SetFull(false)
	// The reply streams: its message shows "echo: " before the edit that
	// completes it.
	waitfor.True(t, `the held message answered "echo: second"`, func() bool {
		got := fc.texts("c1")
		return len(got) >= 3 && got[2] == "echo: second"
	})
	if got := fc.texts("c1"); len(got) != 3 {
		t.Errorf("chat %q, want the first reply, one notice and the held message's reply", got)
	}
	waitfor.True(t, "/readyz ready again", func() bool { code, _ := get(t, "http://"+r.addr+"/readyz"); return code == http.StatusOK })
	// The platform shows the reply a moment before the outbox records it
	// delivered.
	waitfor.True(t, "no reply pending", func() bool {
		var st Status
		_, sbody := get(t, "http://"+r.addr+"/api/status")
		return json.Unmarshal([]byte(sbody), &st) == nil && st.PendingReplies == 0
	})
	// The gauge and the counter follow the outbox a moment later still
	// (one run under load read the gauge at 0 before the counter moved).
	waitfor.True(t, `the outbox gauge at 0 and a "sent" counted`, func() bool {
		_, metrics := get(t, "http://"+r.addr+"/metrics")
		return strings.Contains(metrics, "nanobot_outbox_pending 0") && strings.Contains(metrics, `nanobot_outbox_finished_total{outcome="sent"}`)
	})

	// The journal as written reads back with both messages and nothing torn.
	j, _, err := journal.Open(filepath.Join(r.dir, "state", "inbox.jsonl"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := j.Add(bus.Inbound{Channel: "fake", ChatID: "c1", MessageID: "2"}); err != journal.ErrDuplicate {
		t.Errorf("message 2 not in the journal after recovery: %v", err)
	}
}

// stubInbox answers Accept with err.
type stubInbox struct{ err error }

func (s stubInbox) Accept(context.Context, bus.Inbound) error { return s.err }
func (stubInbox) Done(bus.Inbound, bool, error)               {}
func (stubInbox) Pending() int                                { return 0 }

// A cluster bus that cannot reach NATS is "unavailable, retry", like a
// full disk: the adapter holds the message instead of giving up on it
// after a few attempts. Other failures, and a caller that gave up, are
// passed on as they are.
func TestAcceptMapsBusOutageToUnavailable(t *testing.T) {
	d := &delivery{notify: func(context.Context, bus.Outbound) error { t.Error("notice sent"); return nil },
		log: slog.New(slog.DiscardHandler), noticed: map[string]time.Time{}}
	m := bus.Inbound{Channel: "telegram", ChatID: "c1", MessageID: "9"}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name        string
		ctx         context.Context
		err         error
		unavailable bool
	}{
		{"nats timeout", context.Background(), fmt.Errorf("natsbus: publish inbound: %w", nats.ErrTimeout), true},
		{"no responders", context.Background(), fmt.Errorf("natsbus: publish inbound: %w", nats.ErrNoResponders), true},
		{"no stream response", context.Background(), fmt.Errorf("natsbus: publish inbound: %w", jetstream.ErrNoStreamResponse), true},
		{"reconnecting", context.Background(), fmt.Errorf("natsbus: publish inbound: %w", nats.ErrConnectionReconnecting), true},
		{"attempt timed out", context.Background(), fmt.Errorf("natsbus: publish inbound: %w", context.DeadlineExceeded), true},
		{"caller gave up", cancelled, fmt.Errorf("natsbus: publish inbound: %w", context.Canceled), false},
		{"caller gave up during an outage", cancelled, fmt.Errorf("natsbus: publish inbound: %w", nats.ErrTimeout), false},
		{"bus closed", context.Background(), natsbus.ErrClosed, false},
		{"duplicate", context.Background(), journal.ErrDuplicate, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := d.accept(tc.ctx, stubInbox{err: tc.err}, m)
			if got := errors.Is(err, channels.ErrUnavailable); got != tc.unavailable {
				t.Errorf("accept = %v: unavailable %v, want %v", err, got, tc.unavailable)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("accept = %v, want it to wrap %v", err, tc.err)
			}
		})
	}
}
