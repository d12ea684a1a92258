package qq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/qq/qqtest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/redact"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

const (
	aliceID   = "E4F1A2B3C4D5E6F7A8B9C0D1E2F3A4B5" // openids are 32 hex digits
	malloryID = "0A1B2C3D4E5F60718293A4B5C6D7E8F9"
	groupID   = "9F8E7D6C5B4A39281706F5E4D3C2B1A0"
	guildID   = "7766554433221100"
)

// newFake starts a fake that fails the test if the adapter broke the
// protocol.
func newFake(t *testing.T) *qqtest.Server {
	t.Helper()
	fake := qqtest.New(t)
	t.Cleanup(func() {
		for _, v := range fake.Violations() {
			t.Errorf("protocol violation: %s", v)
		}
	})
	return fake
}

// newChannel builds a channel against fake with short timings.
func newChannel(t *testing.T, fake *qqtest.Server, log *slog.Logger, mediaDir string, edit func(*Config)) *Channel {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Enabled, cfg.AllowFrom = true, []string{"*"}
	cfg.AppID, cfg.Secret = qqtest.AppID, qqtest.Secret
	cfg.APIBase, cfg.AuthBase = fake.URL, fake.URL
	if edit != nil {
		edit(&cfg)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ch, err := New(cfg, channels.Deps{Log: log, Paths: configs.Paths{Media: mediaDir}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ch.backoffMin, ch.backoffMax = 10*time.Millisecond, 100*time.Millisecond
	return ch
}

// chatOf is the adapter's chat id for a fake's send target.
func chatOf(kind, target string) string {
	switch kind {
	case "groups":
		return groupPrefix + target
	case "dms":
		return dmsPrefix + target
	}
	return target
}

func TestConformance(t *testing.T) {
	channeltest.Run(t, channeltest.Harness{
		Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
			fake := newFake(t)
			ch := newChannel(t, fake, env.Log, env.MediaDir, nil)
			users := map[string]string{channeltest.Alice: aliceID, channeltest.Mallory: malloryID}
			return channeltest.Fixture{
				Channel:  ch,
				SenderID: func(user string) string { return users[user] },
				Emit: func(m channeltest.Message) channeltest.Emitted {
					if m.Group {
						// GROUP_AT_MESSAGE_CREATE: QQ delivers only @-messages,
						// with the mention removed and a leading space left.
						id := fake.Send(qqtest.Msg{Kind: qqtest.Group, From: users[m.From], Chat: groupID, Content: " " + m.Text})
						return channeltest.Emitted{ChatID: groupPrefix + groupID, MessageID: id}
					}
					id := fake.Send(qqtest.Msg{Kind: qqtest.C2C, From: users[m.From], Content: m.Text})
					return channeltest.Emitted{ChatID: users[m.From], MessageID: id}
				},
				EmitMalformed: func() {
					fake.PushRaw(`{"op":0,"s":`) // not JSON
					fake.Dispatch(qqtest.C2C, []byte(`{"id":42,"author":"mallory","content":7}`))
				},
				Drop: fake.Drop,
				Sent: func() []channeltest.Sent {
					var out []channeltest.Sent
					for _, s := range fake.Sent() {
						out = append(out, channeltest.Sent{ChatID: chatOf(s.Kind, s.Target), MessageID: s.ID, Text: s.Content, At: s.At})
					}
					return out
				},
				// The gateway has no per-message ack; what the adapter
				// reports is the seq in its heartbeats and Resume, which it
				// advances only after Deliver returned.
				Acked: func(e channeltest.Emitted) bool { return fake.Acked(e.MessageID) },
			}
		},
	})
}

// run starts ch, waits until it is connected, and stops it when the test
// ends.
func run(t *testing.T, ch *Channel, in channels.Inbox) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, in) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Run did not return within 5 s")
		}
	})
	waitfor.True(t, "connected", func() bool { return ch.Health().State == channels.StateConnected })
}

func TestReconnectOp7Resumes(t *testing.T) {
	fake := newFake(t)
	ch := newChannel(t, fake, nil, "", nil)
	in := &channeltest.Recorder{}
	run(t, ch, in)
	fake.Send(qqtest.Msg{Kind: qqtest.C2C, From: aliceID, Content: "before op 7"})
	in.Wait(t, "before op 7")
	fake.Reconnect()
	fake.Send(qqtest.Msg{Kind: qqtest.C2C, From: aliceID, Content: "after op 7"})
	in.Wait(t, "after op 7")
	if ids, resumes, _ := fake.Counts(); ids != 1 || resumes != 1 {
		t.Errorf("identifies %d resumes %d, want 1 and 1 (op 7 must be answered by Resume)", ids, resumes)
	}
	if n := len(in.All()); n != 2 {
		t.Errorf("%d deliveries, want 2", n)
	}
}

// holdInbox blocks Deliver of messages containing hold until release is
// closed.
type holdInbox struct {
	channeltest.Recorder
	hold    string
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (h *holdInbox) Deliver(ctx context.Context, m bus.Inbound) error {
	if strings.Contains(m.Content, h.hold) {
		h.once.Do(func() { close(h.entered) })
		select {
		case <-h.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return h.Recorder.Deliver(ctx, m)
}

// A message still being delivered when the socket drops is not reported
// as handled: the Resume names an older seq, the platform replays it, and
// the replay is recognised as a duplicate, so the agent gets it once.
func TestDropDuringDeliveryReplaysOnce(t *testing.T) {
	fake := newFake(t)
	ch := newChannel(t, fake, nil, "", nil)
	in := &holdInbox{hold: "slow one", entered: make(chan struct{}), release: make(chan struct{})}
	run(t, ch, in)
	fake.Send(qqtest.Msg{Kind: qqtest.C2C, From: aliceID, Content: "first"})
	in.Wait(t, "first")
	id := fake.Send(qqtest.Msg{Kind: qqtest.C2C, From: aliceID, Content: "slow one"})
	<-in.entered
	fake.Drop()
	waitfor.True(t, "the resume", func() bool { _, r, _ := fake.Counts(); return r == 1 && fake.Ready() })
	if fake.Acked(id) {
		t.Fatal("the message was reported handled while Deliver had not returned")
	}
	close(in.release)
	waitfor.True(t, "the message reported handled", func() bool { return fake.Acked(id) })
	fake.Send(qqtest.Msg{Kind: qqtest.C2C, From: aliceID, Content: "last"})
	in.Wait(t, "last")
	n := 0
	for _, m := range in.All() {
		if m.MessageID == id {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the replayed message was delivered %d times, want 1", n)
	}
}

func TestInvalidSessionIdentifiesAfresh(t *testing.T) {
	fake := newFake(t)
	ch := newChannel(t, fake, nil, "", nil)
	in := &channeltest.Recorder{}
	run(t, ch, in)
	fake.InvalidateSession()
	waitfor.True(t, "a fresh Identify", func() bool { ids, _, _ := fake.Counts(); return ids == 2 && fake.Ready() })
	if _, resumes, _ := fake.Counts(); resumes != 0 {
		t.Errorf("%d resumes accepted for an invalidated session", resumes)
	}
	fake.Send(qqtest.Msg{Kind: qqtest.C2C, From: aliceID, Content: "new session"})
	in.Wait(t, "new session")
	waitfor.True(t, "connected", func() bool { return ch.Health().State == channels.StateConnected })
}

func TestHeartbeats(t *testing.T) {
	fake := newFake(t)
	ch := newChannel(t, fake, nil, "", nil)
	in := &channeltest.Recorder{}
	run(t, ch, in)
	id := fake.Send(qqtest.Msg{Kind: qqtest.C2C, From: aliceID, Content: "count me"})
	in.Wait(t, "count me")
	waitfor.True(t, "a heartbeat carrying the message's seq", func() bool { return fake.Acked(id) })
	_, _, beats := fake.Counts()
	waitfor.True(t, "more heartbeats", func() bool { _, _, b := fake.Counts(); return b >= beats+3 })
	if ids, resumes, _ := fake.Counts(); ids != 1 || resumes != 0 {
		t.Errorf("identifies %d resumes %d on a healthy connection, want 1 and 0", ids, resumes)
	}
}

func TestBadCredentialsStopRun(t *testing.T) {
	fake := newFake(t)
	ch := newChannel(t, fake, nil, "", func(c *Config) { c.Secret = "wrong-secret-value" })
	done := make(chan error, 1)
	go func() { done <- ch.Run(t.Context(), &channeltest.Recorder{}) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "100016") || !channels.IsFatal(err) {
			t.Fatalf("Run = %v, want the platform's refusal as a fatal error", err)
		}
		if strings.Contains(err.Error(), "wrong-secret-value") {
			t.Fatalf("the error shows the secret: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run kept retrying rejected credentials")
	}
	if h := ch.Health(); h.State != channels.StateFailed || strings.Contains(h.LastError, "wrong-secret-value") {
		t.Errorf("health %+v", h)
	}
}

func TestConfigValidation(t *testing.T) {
	ok := DefaultConfig()
	ok.AppID, ok.Secret = "1", "s"
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"ok", func(*Config) {}, ""},
		{"no appId", func(c *Config) { c.AppID = " " }, "appId is required"},
		{"no secret", func(c *Config) { c.Secret = "" }, "secret is required"},
		{"bad format", func(c *Config) { c.MsgFormat = "html" }, "msgFormat"},
		{"bad policy", func(c *Config) { c.GroupPolicy = "all" }, "groupPolicy"},
		{"bad apiBase", func(c *Config) { c.APIBase = "api.sgroup.qq.com" }, "apiBase"},
		{"bad authBase", func(c *Config) { c.AuthBase = "ftp://bots.qq.com" }, "authBase"},
		{"negative media", func(c *Config) { c.MaxMediaBytes = -1 }, "maxMediaBytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.edit(&c)
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("got %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error naming %q", err, tt.want)
			}
		})
	}
	// New fills in defaults for empty keys.
	c := Config{AppID: "1", Secret: "s-secret"}
	ch, err := New(c, channels.Deps{})
	if err != nil || ch.cfg.APIBase != DefaultAPIBase || ch.cfg.AuthBase != DefaultAuthBase || ch.cfg.MsgFormat != FormatPlain {
		t.Fatalf("New with defaults: %v %+v", err, ch)
	}
	if _, err := New(Config{Secret: "s-secret"}, channels.Deps{}); err == nil || strings.Contains(err.Error(), "s-secret") {
		t.Fatalf("New without appId: %v", err)
	}
}

func TestFactoryDecodesCamelCaseKeys(t *testing.T) {
	raw := `{"qq":{"enabled":true,"appId":"123","secret":"abc-secret","msgFormat":"markdown","ackMessage":"on it","groupPolicy":"open","apiBase":"http://127.0.0.1:1","authBase":"http://127.0.0.1:2","allowFrom":["X"]}}`
	var cc configs.ChannelsConfig
	if err := cc.UnmarshalJSON([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	got, err := Factory().New(cc, channels.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := got.(*Channel).cfg
	if cfg.AppID != "123" || cfg.Secret != "abc-secret" || cfg.MsgFormat != FormatMarkdown || cfg.AckMessage != "on it" ||
		cfg.GroupPolicy != channels.GroupOpen || cfg.APIBase != "http://127.0.0.1:1" || cfg.AuthBase != "http://127.0.0.1:2" {
		t.Errorf("decoded %+v", cfg)
	}
}

func TestErrorsKeepSecretsOut(t *testing.T) {
	fake := newFake(t)
	ch := newChannel(t, fake, nil, "", nil)
	fake.FailNext(1, 500, 500000)
	_, err := ch.Send(t.Context(), bus.Outbound{ChatID: aliceID, Content: "hi"})
	if err == nil {
		t.Fatal("want the injected failure")
	}
	tok, _ := ch.tokens.Get(t.Context())
	for _, s := range []string{qqtest.Secret, tok} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error %q shows a credential", err)
		}
	}
	if ch.redact.String("x "+tok) != "x "+redact.Mask {
		t.Error("the access token is not registered with the redactor")
	}
}

func TestCloseCodes(t *testing.T) {
	t.Run("4004 invalid token: a new token", func(t *testing.T) {
		fake := newFake(t)
		ch := newChannel(t, fake, nil, "", nil)
		in := &channeltest.Recorder{}
		run(t, ch, in)
		before := fake.Tokens()
		fake.CloseNext(4004)
		fake.Drop()
		waitfor.True(t, "a resume with a new token", func() bool { _, r, _ := fake.Counts(); return r == 1 })
		if fake.Tokens() != before+1 {
			t.Errorf("%d tokens issued after close 4004, want one more than %d", fake.Tokens(), before)
		}
	})
	t.Run("4006 invalid session: identify afresh", func(t *testing.T) {
		fake := newFake(t)
		ch := newChannel(t, fake, nil, "", nil)
		in := &channeltest.Recorder{}
		run(t, ch, in)
		fake.CloseNext(4006)
		fake.Drop()
		waitfor.True(t, "a fresh Identify", func() bool { ids, _, _ := fake.Counts(); return ids == 2 && fake.Ready() })
		if _, r, _ := fake.Counts(); r != 0 {
			t.Errorf("%d resumes after close 4006", r)
		}
		fake.Send(qqtest.Msg{Kind: qqtest.C2C, From: aliceID, Content: "still here"})
		in.Wait(t, "still here")
	})
	for _, code := range []int{4013, 4014, 4914, 4915} {
		t.Run(fmt.Sprintf("%d: Run gives up for good", code), func(t *testing.T) {
			fake := newFake(t)
			ch := newChannel(t, fake, nil, "", nil)
			fake.CloseNext(code)
			done := make(chan error, 1)
			go func() { done <- ch.Run(t.Context(), &channeltest.Recorder{}) }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), fmt.Sprint(code)) || !channels.IsFatal(err) {
					t.Fatalf("Run = %v (fatal %v), want the close %d reported as fatal", err, channels.IsFatal(err), code)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("Run kept reconnecting after close %d", code)
			}
			if h := ch.Health(); h.State != channels.StateFailed || !strings.Contains(h.LastError, fmt.Sprint(code)) {
				t.Errorf("health %+v, want failed naming close %d", h, code)
			}
		})
	}
}

// flakyInbox fails the first n deliveries of messages containing text.
type flakyInbox struct {
	channeltest.Recorder
	text string
	mu   sync.Mutex
	n    int
}

func (f *flakyInbox) Deliver(ctx context.Context, m bus.Inbound) error {
	if strings.Contains(m.Content, f.text) {
		f.mu.Lock()
		fail := f.n > 0
		f.n--
		f.mu.Unlock()
		if fail {
			return errors.New("journal write failed")
		}
	}
	return f.Recorder.Deliver(ctx, m)
}

// When the gateway cannot take a message even after retries, the channel
// does not report it handled: it reconnects, resumes from before it, and
// QQ delivers it (and what followed) again.
func TestUndeliverableMessageIsRedelivered(t *testing.T) {
	fake := newFake(t)
	ch := newChannel(t, fake, nil, "", nil)
	in := &flakyInbox{text: "flaky", n: channels.DeliverAttempts}
	run(t, ch, in)
	flaky := fake.Send(qqtest.Msg{Kind: qqtest.C2C, From: aliceID, Content: "flaky"})
	after := fake.Send(qqtest.Msg{Kind: qqtest.C2C, From: aliceID, Content: "after it"})
	in.Wait(t, "flaky")
	in.Wait(t, "after it")
	waitfor.True(t, "both reported handled", func() bool { return fake.Acked(flaky) && fake.Acked(after) })
	if _, resumes, _ := fake.Counts(); resumes != 1 {
		t.Errorf("%d resumes, want 1", resumes)
	}
	count := map[string]int{}
	for _, m := range in.All() {
		count[m.Content]++
	}
	if count["flaky"] != 1 || count["after it"] != 1 {
		t.Errorf("deliveries %v, want each message once", count)
	}
}
