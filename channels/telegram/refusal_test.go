package telegram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// refusingInbox refuses messages while refuse says so, and records what it
// took and whether the platform had seen a message acknowledged at the
// moment it was offered.
type refusingInbox struct {
	refuse func(m bus.Inbound, attempt int) error
	acked  func(m bus.Inbound) bool // nil: not checked

	mu       sync.Mutex
	attempts map[string]int
	taken    []string
	early    []string // contents offered after the platform saw them acknowledged
}

func (in *refusingInbox) Deliver(_ context.Context, m bus.Inbound) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.attempts == nil {
		in.attempts = map[string]int{}
	}
	in.attempts[m.Content]++
	if in.acked != nil && in.acked(m) {
		in.early = append(in.early, m.Content)
	}
	if err := in.refuse(m, in.attempts[m.Content]); err != nil {
		return err
	}
	in.taken = append(in.taken, m.Content)
	return nil
}

func (in *refusingInbox) snapshot() (taken, early []string, attempts map[string]int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	attempts = map[string]int{}
	for k, v := range in.attempts {
		attempts[k] = v
	}
	return slices.Clone(in.taken), slices.Clone(in.early), attempts
}

// The gateway refuses the middle update of a batch more often than one
// poll session retries it: the offset never moves past it (no poll
// confirms it while it is refused), the session ends and the next one
// fetches it again, and every update is taken exactly once, in order.
func TestPollingKeepsRefusedUpdateUntilTaken(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), nil)
	ids := map[string]int64{}
	for _, text := range []string{"one", "two", "three"} {
		ids[text], _ = fake.Send(telegramtest.Msg{From: alice, Chat: private(alice), Text: text})
	}
	refusals := channels.DeliverAttempts + 2 // more than one session tries
	in := &refusingInbox{
		refuse: func(m bus.Inbound, attempt int) error {
			if m.Content == "two" && attempt <= refusals {
				return errors.New("journal: write failed")
			}
			return nil
		},
		acked: func(m bus.Inbound) bool { return fake.Acked(ids[m.Content]) },
	}
	startWith(t, ch, in)
	waitfor.True(t, "all three taken", func() bool { taken, _, _ := in.snapshot(); return len(taken) == 3 })
	waitfor.True(t, "the last update acknowledged", func() bool { return fake.Acked(ids["three"]) })

	taken, early, attempts := in.snapshot()
	if want := []string{"one", "two", "three"}; !slices.Equal(taken, want) {
		t.Errorf("taken %q, want %q (each once, in order)", taken, want)
	}
	if len(early) != 0 {
		t.Errorf("offered after Telegram saw them acknowledged: %q", early)
	}
	if attempts["two"] != refusals+1 {
		t.Errorf("%d attempts of the refused update, want %d", attempts["two"], refusals+1)
	}
	if attempts["one"] != 1 || attempts["three"] != 1 {
		t.Errorf("attempts %v: the updates around the refused one were offered again", attempts)
	}
}

// While the gateway cannot store messages at all (ErrUnavailable), the
// update is held, unacknowledged, and Health says the channel is not
// doing its job; once the gateway takes it, Health is connected again.
func TestPollingHoldsUpdateWhileGatewayUnavailable(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), nil)
	var down atomic.Bool
	down.Store(true)
	in := &refusingInbox{refuse: func(bus.Inbound, int) error {
		if down.Load() {
			return fmt.Errorf("natsbus: publish inbound: timeout: %w", channels.ErrUnavailable)
		}
		return nil
	}}
	startWith(t, ch, in)
	upd, _ := fake.Send(telegramtest.Msg{From: alice, Chat: private(alice), Text: "held"})
	waitfor.True(t, "Health to report the refusal", func() bool {
		h := ch.Health()
		return h.State == channels.StateReconnecting && strings.Contains(h.LastError, "not taking messages")
	})
	waitfor.True(t, "more attempts than one session's", func() bool {
		_, _, attempts := in.snapshot()
		return attempts["held"] > channels.DeliverAttempts
	})
	if fake.Acked(upd) {
		t.Fatal("the update was acknowledged while the gateway refused it")
	}
	down.Store(false)
	waitfor.True(t, "the update taken", func() bool { taken, _, _ := in.snapshot(); return len(taken) == 1 })
	waitfor.True(t, "Health connected again", func() bool { return ch.Health().State == channels.StateConnected })
	waitfor.True(t, "the update acknowledged", func() bool { return fake.Acked(upd) })
	if taken, _, _ := in.snapshot(); !slices.Equal(taken, []string{"held"}) {
		t.Errorf("taken %q, want it once", taken)
	}
}

// In webhook mode a refused update is answered 503, so that Telegram
// sends it again; once the gateway takes it, 200.
func TestWebhookAnswers503WhileGatewayRefuses(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), func(c *Config) {
		c.WebhookURL, c.WebhookSecret = "https://bot.example.com/hooks/telegram", "s3cret"
	})
	srv := httptest.NewServer(ch.WebhookHandler())
	t.Cleanup(srv.Close)
	var refuse atomic.Bool
	refuse.Store(true)
	in := &refusingInbox{refuse: func(bus.Inbound, int) error {
		if refuse.Load() {
			return errors.New("journal: write failed")
		}
		return nil
	}}
	startWith(t, ch, in)
	waitfor.True(t, "the channel to connect", func() bool { return ch.Health().State == channels.StateConnected })
	id, _ := fake.Send(telegramtest.Msg{From: alice, Chat: private(alice), Text: "via webhook"})
	post := func() int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/hooks/telegram", bytes.NewReader(fake.Update(id)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", "s3cret")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatalf("POST: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(); code/100 == 2 {
		t.Fatalf("refused update answered %d: Telegram would not send it again", code)
	}
	if h := ch.Health(); h.State != channels.StateReconnecting || !strings.Contains(h.LastError, "not taking messages") {
		t.Errorf("Health = %+v while the gateway refuses, want reconnecting with why", h)
	}
	refuse.Store(false)
	if code := post(); code != http.StatusOK {
		t.Fatalf("taken update answered %d, want 200", code)
	}
	if taken, _, _ := in.snapshot(); !slices.Equal(taken, []string{"via webhook"}) {
		t.Errorf("taken %q, want the update once", taken)
	}
	if h := ch.Health(); h.State != channels.StateConnected {
		t.Errorf("Health = %+v after the gateway took the update, want connected", h)
	}
}
