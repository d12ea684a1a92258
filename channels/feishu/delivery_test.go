package feishu

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/feishu/feishutest"
	"github.com/nanobot-go/nanobot/internal/syncbuf"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// flaky is an Inbox that fails until it is told to work.
type flaky struct {
	mu       sync.Mutex
	working  bool
	attempts int
	got      []bus.Inbound
}

func (f *flaky) Deliver(_ context.Context, m bus.Inbound) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts++
	if !f.working {
		return errors.New("journal full")
	}
	f.got = append(f.got, m)
	return nil
}

func (f *flaky) state() (int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts, len(f.got)
}

// TestUndeliveredNotAcknowledged: a message the gateway could not take is
// left unacknowledged, and its redelivery is taken (not dropped as a
// duplicate); a redelivery of a taken message is acknowledged and dropped.
func TestUndeliveredNotAcknowledged(t *testing.T) {
	fake := feishutest.New(t)
	noViolations(t, fake)
	var logs syncbuf.Buffer
	ch := newChannel(t, fake, slog.New(slog.NewTextHandler(&logs, nil)), "", func(c *Config) { c.ReactEmoji = "" })
	ch.backoffMin, ch.backoffMax = time.Millisecond, 5*time.Millisecond
	in := &flaky{}
	running(t, ch, in)
	first := fake.Push(feishutest.Message{From: aliceID, Text: "try me", MessageID: "om_same"})
	waitfor.True(t, "the adapter to give up on the message", func() bool { return strings.Contains(logs.String(), "did not take a message") })
	in.mu.Lock()
	in.working = true
	in.mu.Unlock()
	again := fake.Push(feishutest.Message{From: aliceID, Text: "try me", MessageID: "om_same"})
	waitfor.True(t, "the redelivery to be taken and acknowledged", func() bool { _, n := in.state(); return n == 1 && fake.Acked(again.FrameID) })
	if fake.Acked(first.FrameID) { // handled before the redelivery, so decided by now
		t.Error("a message the inbox refused to take was acknowledged")
	}
	dup := fake.Push(feishutest.Message{From: aliceID, Text: "try me", MessageID: "om_same"})
	waitfor.True(t, "the duplicate to be acknowledged", func() bool { return fake.Acked(dup.FrameID) })
	if _, n := in.state(); n != 1 {
		t.Errorf("%d deliveries, want the message once", n)
	}
}

// TestNoSecretsInLogs: through connecting, a dropped connection, failed
// endpoint calls and sends, neither the app secret, the tenant token nor
// the long connection's access key shows in the log or in Health.
func TestNoSecretsInLogs(t *testing.T) {
	fake := feishutest.New(t)
	var logs syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ch := newChannel(t, fake, log, "", nil)
	rec := &channeltest.Recorder{}
	running(t, ch, rec)
	fake.Push(feishutest.Message{From: aliceID, Text: "one"})
	rec.Wait(t, "one")
	fake.FailNextOpens(1)
	fake.Drop()
	fake.Push(feishutest.Message{From: aliceID, Text: "two"})
	rec.Wait(t, "two")
	fake.ExpireTokens()
	_, _ = ch.Send(testCtx(t), bus.Outbound{ChatID: "oc_nowhere", Content: "x"})
	ctx := testCtx(t)
	tok, err := ch.tokens.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	text := logs.String() + ch.Health().LastError
	for _, secret := range []string{feishutest.AppSecret, tok, "ak-secret-key", "t-fake-token"} {
		if strings.Contains(text, secret) {
			t.Errorf("the log shows %q:\n%s", secret, text)
		}
	}
	if !strings.Contains(text, "reconnect") && !strings.Contains(text, "retrying") {
		t.Errorf("the log does not mention the reconnect:\n%s", text)
	}
}
