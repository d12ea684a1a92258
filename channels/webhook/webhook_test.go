package webhook_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/webhook"
	"github.com/nanobot-go/nanobot/channels/webhook/webhooktest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

const (
	secret      = "0123456789abcdef-test-secret"
	otherSecret = "fedcba9876543210-not-the-secret"
)

// inbox records deliveries; onDeliver, when set, runs after each one.
type inbox struct {
	deny      string
	onDeliver func(m bus.Inbound)

	mu  sync.Mutex
	got []bus.Inbound
}

func (in *inbox) Deliver(_ context.Context, m bus.Inbound) error {
	if m.SenderID == in.deny {
		return channels.ErrDenied
	}
	in.mu.Lock()
	in.got = append(in.got, m)
	in.mu.Unlock()
	if in.onDeliver != nil {
		in.onDeliver(m)
	}
	return nil
}

func (in *inbox) all() []bus.Inbound {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]bus.Inbound(nil), in.got...)
}

// setup builds a channel with hooks, serves it the way the gateway does
// (mounted at WebhookPath on a ServeMux) and runs it with in.
func setup(t testing.TB, hooks map[string]webhook.Hook, in channels.Inbox, log *slog.Logger) (*webhook.Channel, *httptest.Server) {
	t.Helper()
	cfg := webhook.DefaultConfig()
	cfg.Enabled, cfg.Hooks, cfg.MaxBodyBytes = true, hooks, 4096
	ch, err := webhook.New(cfg, channels.Deps{Log: log})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle(ch.WebhookPath(), ch.WebhookHandler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	if in != nil {
		run(t, ch, in)
	}
	return ch, srv
}

func run(t testing.TB, ch *webhook.Channel, in channels.Inbox) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, in) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	waitfor.Within(t, "running", 5*time.Second, func() bool { return ch.Health().State == channels.StateConnected })
}

func TestConformance(t *testing.T) {
	channeltest.Run(t, channeltest.Harness{
		Skip: map[string]string{
			channeltest.CheckInboundGroup:   "a hook has no group chats",
			channeltest.CheckLongReplySplit: "answers are never split (one POST or one response each)",
			channeltest.CheckDropConnection: "there is no connection to drop: every request stands alone",
		},
		Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
			recv := webhooktest.NewReceiver(t, secret)
			cfg := webhook.DefaultConfig()
			cfg.Enabled, cfg.Hooks = true, map[string]webhook.Hook{"ci": {Secret: secret, ReplyURL: recv.URL}}
			ch, err := webhook.New(cfg, channels.Deps{Log: env.Log})
			if err != nil {
				t.Fatal(err)
			}
			mux := http.NewServeMux()
			mux.Handle(ch.WebhookPath(), ch.WebhookHandler())
			srv := httptest.NewServer(mux)
			t.Cleanup(srv.Close)
			caller := &webhooktest.Caller{URL: srv.URL + "/hooks/ci", Secret: secret}
			var n int
			var mu sync.Mutex
			return channeltest.Fixture{
				Channel:  ch,
				SenderID: func(user string) string { return "ci:" + user },
				Emit: func(m channeltest.Message) channeltest.Emitted {
					mu.Lock()
					n++
					id := fmt.Sprintf("m%d", n)
					mu.Unlock()
					// The request returns once delivered. That never waits
					// on the suite's inbox here: the only check that holds
					// Deliver (ack_after_delivery) needs Acked, which a
					// webhook has not. Posting inline leaves no goroutine
					// of ours for the leak check to find.
					//
					// The suite starts Run in a goroutine and emits at once;
					// a request that beats Run gets 503 and is posted again
					// once Run took the inbox (Health turns connected).
					req := webhook.Request{ChatID: "chat-" + m.From, SenderID: m.From, Text: m.Text, ID: id}
					if res := caller.Post(t, req); res.Status == http.StatusServiceUnavailable {
						waitfor.Within(t, "Run to take requests", 10*time.Second, func() bool {
							return ch.Health().State == channels.StateConnected
						})
						caller.Post(t, req)
					}
					return channeltest.Emitted{ChatID: "ci:chat-" + m.From, MessageID: "ci:" + id}
				},
				EmitMalformed: func() {
					body := []byte(`{"chatId": 7, "text": `)
					ts := time.Now().Unix()
					caller.PostRaw(t, body, strconv.FormatInt(ts, 10), webhook.Sign(secret, ts, body))
				},
				Sent: func() []channeltest.Sent {
					var out []channeltest.Sent
					for _, r := range recv.Got() {
						if r.Verified {
							out = append(out, channeltest.Sent{ChatID: "ci:" + r.Reply.ChatID, MessageID: r.Reply.ID, Text: r.Reply.Text, At: r.At})
						}
					}
					return out
				},
			}
		},
	})
}

// TestRejectedRequests: forged, tampered, stale, replayed, oversized,
// malformed and misaddressed requests are refused with the documented
// status, and none of them reaches the inbox.
func TestRejectedRequests(t *testing.T) {
	in := &inbox{}
	_, srv := setup(t, map[string]webhook.Hook{
		"ha":   {Secret: secret, Sync: false, ReplyURL: "http://127.0.0.1:1/reply"},
		"only": {Secret: secret, ReplyURL: "http://127.0.0.1:1/reply", AllowFrom: []string{"ann"}},
	}, in, nil)
	good := &webhooktest.Caller{URL: srv.URL + "/hooks/ha", Secret: secret}
	forger := &webhooktest.Caller{URL: srv.URL + "/hooks/ha", Secret: otherSecret}
	body := []byte(`{"chatId":"kitchen","senderId":"ann","text":"lights off"}`)
	now := time.Now().Unix()
	ts := strconv.FormatInt(now, 10)
	sig := webhook.Sign(secret, now, body)

	for _, tt := range []struct {
		name       string
		do         func() webhooktest.Result
		status     int
		errContain string
	}{
		{"wrong secret", func() webhooktest.Result {
			return forger.Post(t, webhook.Request{ChatID: "c", SenderID: "ann", Text: "x"})
		}, 401, "does not match"},
		{"tampered body", func() webhooktest.Result {
			return good.PostRaw(t, bytes.Replace(body, []byte("off"), []byte("on!"), 1), ts, sig)
		}, 401, "does not match"},
		// The signature is checked before the body is parsed: a forged
		// request with a body that is not JSON is 401, not 400.
		{"forged, not JSON", func() webhooktest.Result { return good.PostRaw(t, []byte("{{{"), ts, sig) }, 401, "does not match"},
		{"no headers", func() webhooktest.Result { return good.PostRaw(t, body, "", "") }, 401, "X-Nanobot-Timestamp"},
		{"no signature", func() webhooktest.Result { return good.PostRaw(t, body, ts, "") }, 401, "X-Nanobot-Signature"},
		{"malformed signature", func() webhooktest.Result { return good.PostRaw(t, body, ts, "md5=abc") }, 401, "sha256="},
		{"stale", func() webhooktest.Result {
			old := time.Now().Add(-6 * time.Minute).Unix()
			return good.PostRaw(t, body, strconv.FormatInt(old, 10), webhook.Sign(secret, old, body))
		}, 401, "5 minutes"},
		{"from the future", func() webhooktest.Result {
			later := time.Now().Add(6 * time.Minute).Unix()
			return good.PostRaw(t, body, strconv.FormatInt(later, 10), webhook.Sign(secret, later, body))
		}, 401, "5 minutes"},
		{"too large", func() webhooktest.Result {
			big := []byte(`{"chatId":"c","senderId":"ann","text":"` + strings.Repeat("x", 5000) + `"}`)
			return good.PostRaw(t, big, ts, webhook.Sign(secret, now, big))
		}, 413, "maxBodyBytes"},
		{"signed but not JSON", func() webhooktest.Result {
			bad := []byte("not json")
			return good.PostRaw(t, bad, ts, webhook.Sign(secret, now, bad))
		}, 400, "not JSON"},
		{"missing text", func() webhooktest.Result { return good.Post(t, webhook.Request{ChatID: "c", SenderID: "ann"}) }, 400, "text"},
		{"unknown hook", func() webhooktest.Result {
			return (&webhooktest.Caller{URL: srv.URL + "/hooks/nope", Secret: secret}).Post(t, webhook.Request{ChatID: "c", SenderID: "ann", Text: "x"})
		}, 404, "unknown hook"},
		{"not on the hook's allowFrom", func() webhooktest.Result {
			return (&webhooktest.Caller{URL: srv.URL + "/hooks/only", Secret: secret}).Post(t, webhook.Request{ChatID: "c", SenderID: "bob", Text: "x"})
		}, 403, "not allowed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := tt.do()
			if res.Status != tt.status || !strings.Contains(res.Body.Error, tt.errContain) {
				t.Errorf("got %d %q, want %d with %q", res.Status, res.Raw, tt.status, tt.errContain)
			}
		})
	}
	if got := in.all(); len(got) != 0 {
		t.Fatalf("rejected requests reached the inbox: %+v", got)
	}

	// Replays: the genuine request is taken once; the same bytes again are
	// 409, and so is a freshly signed request reusing a message id.
	if res := good.PostRaw(t, body, ts, sig); res.Status != http.StatusAccepted {
		t.Fatalf("genuine request: %d %s", res.Status, res.Raw)
	}
	if res := good.PostRaw(t, body, ts, sig); res.Status != http.StatusConflict {
		t.Errorf("replayed request: %d %s, want 409", res.Status, res.Raw)
	}
	if res := good.Post(t, webhook.Request{ChatID: "c", SenderID: "ann", Text: "one", ID: "evt-1"}); res.Status != http.StatusAccepted || res.Body.ID != "evt-1" {
		t.Fatalf("request with id: %d %s", res.Status, res.Raw)
	}
	later := time.Now().Unix() + 1 // another timestamp: another signature
	again := []byte(`{"chatId":"c","senderId":"ann","text":"one","id":"evt-1"}`)
	if res := good.PostRaw(t, again, strconv.FormatInt(later, 10), webhook.Sign(secret, later, again)); res.Status != http.StatusConflict {
		t.Errorf("reused id: %d %s, want 409", res.Status, res.Raw)
	}
	got := in.all()
	if len(got) != 2 {
		t.Fatalf("inbox got %d messages, want the 2 genuine ones: %+v", len(got), got)
	}
	m := got[0]
	if m.Channel != webhook.Name || m.ChatID != "ha:kitchen" || m.SenderID != "ha:ann" || m.Content != "lights off" || m.MessageID == "" || m.IsGroup {
		t.Errorf("inbound %+v", m)
	}
	if got[1].MessageID != "ha:evt-1" {
		t.Errorf("MessageID %q, want ha:evt-1", got[1].MessageID)
	}
}

// TestNotRunning: a genuine request while the channel does not run gets
// 503 and may be retried with the same signature once it runs.
func TestNotRunning(t *testing.T) {
	ch, srv := setup(t, map[string]webhook.Hook{"ha": {Secret: secret, ReplyURL: "http://127.0.0.1:1/r"}}, nil, nil)
	c := &webhooktest.Caller{URL: srv.URL + "/hooks/ha", Secret: secret}
	body := []byte(`{"chatId":"c","senderId":"ann","text":"hi"}`)
	now := time.Now().Unix()
	ts, sig := strconv.FormatInt(now, 10), webhook.Sign(secret, now, body)
	if res := c.PostRaw(t, body, ts, sig); res.Status != http.StatusServiceUnavailable {
		t.Fatalf("before Run: %d %s, want 503", res.Status, res.Raw)
	}
	in := &inbox{}
	run(t, ch, in)
	if res := c.PostRaw(t, body, ts, sig); res.Status != http.StatusAccepted {
		t.Fatalf("retry once running: %d %s, want 202", res.Status, res.Raw)
	}
	if len(in.all()) != 1 {
		t.Fatalf("inbox %+v", in.all())
	}
}

// TestAsyncReplyIsSigned: the answer goes to replyUrl as a POST the
// receiver verifies with the hook's secret; receiver errors map to the
// dispatcher's retry classes.
func TestAsyncReplyIsSigned(t *testing.T) {
	recv := webhooktest.NewReceiver(t, secret)
	ch, _ := setup(t, map[string]webhook.Hook{"n8n": {Secret: secret, ReplyURL: recv.URL}}, &inbox{}, nil)
	ctx := t.Context()
	out := bus.Outbound{Channel: webhook.Name, ChatID: "n8n:flow-7", Content: "done: 3 items", ReplyTo: "n8n:evt-9", Final: true, IdempotencyKey: "turn1.0"}
	ref, err := ch.Send(ctx, out)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := recv.Got()
	if len(got) != 1 || !got[0].Verified {
		t.Fatalf("receiver got %+v, want one verified POST", got)
	}
	want := webhook.Reply{Hook: "n8n", ChatID: "flow-7", Text: "done: 3 items", ReplyTo: "evt-9", ID: "turn1.0", Final: true}
	if got[0].Reply != want || ref.MessageID != "turn1.0" {
		t.Errorf("reply %+v ref %+v, want %+v", got[0].Reply, ref, want)
	}

	// A receiver with another secret rejects our signature: proof that the
	// signature depends on the secret.
	strict := webhooktest.NewReceiver(t, otherSecret)
	ch2, _ := setup(t, map[string]webhook.Hook{"x": {Secret: secret, ReplyURL: strict.URL}}, &inbox{}, nil)
	if _, err := ch2.Send(ctx, bus.Outbound{ChatID: "x:c", Content: "hi"}); err == nil {
		t.Error("a receiver with another secret accepted the POST")
	}
	if g := strict.Got(); len(g) != 1 || g[0].Verified {
		t.Errorf("strict receiver: %+v, want one unverified POST", g)
	}

	for _, tt := range []struct {
		status int
		check  func(error) bool
		want   string
	}{
		{500, func(err error) bool {
			var pe *channels.PermanentError
			return err != nil && !errors.As(err, &pe)
		}, "a retryable error"},
		{429, func(err error) bool { var ra *channels.RetryAfterError; return errors.As(err, &ra) }, "RetryAfterError"},
		{400, func(err error) bool { var pe *channels.PermanentError; return errors.As(err, &pe) }, "PermanentError"},
	} {
		recv.FailNext(tt.status)
		_, err := ch.Send(ctx, bus.Outbound{ChatID: "n8n:flow-7", Content: "x"})
		if !tt.check(err) {
			t.Errorf("receiver %d: err %v, want %s", tt.status, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("error carries the secret: %v", err)
		}
	}
}

// TestSync: a sync hook answers in the response with every message of the
// turn once the final one came; a turn that takes too long is 504 and its
// late answer goes to replyUrl.
func TestSync(t *testing.T) {
	recv := webhooktest.NewReceiver(t, secret)
	var ch *webhook.Channel
	release := make(chan struct{})
	in := &inbox{onDeliver: func(m bus.Inbound) {
		// The agent answers through the dispatcher, i.e. Send, from another
		// goroutine: a progress message first, then the final answer.
		go func() {
			if strings.Contains(m.Content, "slow") {
				<-release
			}
			ctx := context.Background()
			_, _ = ch.Send(ctx, bus.Outbound{ChatID: m.ChatID, Content: "checking the sensors…", ReplyTo: m.MessageID})
			_, _ = ch.Send(ctx, bus.Outbound{ChatID: m.ChatID, Content: "It is 21 °C in the kitchen.", ReplyTo: m.MessageID, Final: true})
		}()
	}}
	ch, srv := setup(t, map[string]webhook.Hook{
		"ha":   {Secret: secret, Sync: true},
		"slow": {Secret: secret, Sync: true, SyncTimeoutS: 1, ReplyURL: recv.URL},
	}, in, nil)

	res := (&webhooktest.Caller{URL: srv.URL + "/hooks/ha", Secret: secret}).Post(t, webhook.Request{ChatID: "kitchen", SenderID: "ha", Text: "temperature?"})
	if res.Status != http.StatusOK || res.Body.Status != "answered" || res.Body.Text != "checking the sensors…\n\nIt is 21 °C in the kitchen." {
		t.Fatalf("sync answer: %d %s", res.Status, res.Raw)
	}

	began := time.Now()
	res = (&webhooktest.Caller{URL: srv.URL + "/hooks/slow", Secret: secret}).Post(t, webhook.Request{ChatID: "kitchen", SenderID: "ha", Text: "slow question", ID: "q2"})
	if res.Status != http.StatusGatewayTimeout {
		t.Fatalf("slow turn: %d %s, want 504", res.Status, res.Raw)
	}
	if took := time.Since(began); took < time.Second || took > 5*time.Second {
		t.Errorf("504 after %s, want about syncTimeoutS (1 s)", took)
	}
	close(release)
	waitfor.Within(t, "the late answer at replyUrl", 5*time.Second, func() bool {
		for _, r := range recv.Got() {
			if r.Verified && r.Reply.Final && r.Reply.ReplyTo == "q2" && strings.Contains(r.Reply.Text, "21 °C") {
				return true
			}
		}
		return false
	})

	// A sync hook without replyUrl drops what nobody waits for, saying so.
	_, err := ch.Send(t.Context(), bus.Outbound{ChatID: "ha:kitchen", Content: "cron says hi"})
	var pe *channels.PermanentError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "no replyUrl") {
		t.Errorf("unwaited message on a sync hook: %v, want a PermanentError about replyUrl", err)
	}
}

func TestConfig(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*webhook.Config)
		want string
	}{
		{"no hooks", func(c *webhook.Config) { c.Hooks = nil }, "hooks: at least one"},
		{"short secret", func(c *webhook.Config) { c.Hooks["ha"] = webhook.Hook{Secret: "short", Sync: true} }, "hooks.ha.secret"},
		{"nowhere to answer", func(c *webhook.Config) { c.Hooks["ha"] = webhook.Hook{Secret: secret} }, "replyUrl, or sync"},
		{"bad url", func(c *webhook.Config) { c.Hooks["ha"] = webhook.Hook{Secret: secret, ReplyURL: "ftp://x"} }, "hooks.ha.replyUrl"},
		{"bad name", func(c *webhook.Config) { c.Hooks["a/b"] = webhook.Hook{Secret: secret, Sync: true} }, "hooks.a/b"},
		{"long name", func(c *webhook.Config) { c.Hooks[strings.Repeat("h", 65)] = webhook.Hook{Secret: secret, Sync: true} }, "hooks." + strings.Repeat("h", 65)},
		{"channel allowFrom", func(c *webhook.Config) { c.AllowFrom = []string{"*"} }, "hooks.<name>.allowFrom"},
	} {
		c := webhook.DefaultConfig()
		c.Hooks = map[string]webhook.Hook{"ha": {Secret: secret, Sync: true}}
		tt.edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate = %v, want an error about %s", tt.name, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("%s: error carries the secret", tt.name)
		}
	}
}
