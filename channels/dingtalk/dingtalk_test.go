package dingtalk

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/dingtalk/dingtalktest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/bus"
)

var (
	alice   = dingtalktest.User{StaffID: "manager4021", Nick: "Alice"}
	mallory = dingtalktest.User{StaffID: "staff6660", Nick: "Mallory"}
)

const groupConv = "cidGroupXYZ=="

func dmConv(u dingtalktest.User) string { return "cidDM" + u.StaffID }

// newChannel builds a channel against fake with short timings.
func newChannel(t *testing.T, fake *dingtalktest.Server, log *slog.Logger, mediaDir string, edit func(*Config)) *Channel {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Enabled, cfg.AllowFrom = true, []string{"*"}
	cfg.ClientID, cfg.ClientSecret = dingtalktest.ClientID, dingtalktest.ClientSecret
	cfg.APIBase, cfg.OAPIBase = fake.URL, fake.URL
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

func TestConformance(t *testing.T) {
	channeltest.Run(t, channeltest.Harness{
		Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
			fake := dingtalktest.New(t)
			ch := newChannel(t, fake, env.Log, env.MediaDir, nil)
			users := map[string]dingtalktest.User{channeltest.Alice: alice, channeltest.Mallory: mallory}
			var mu sync.Mutex
			frames := map[string]string{} // msgId -> frame id
			return channeltest.Fixture{
				Channel:  ch,
				SenderID: func(user string) string { return users[user].StaffID },
				Emit: func(m channeltest.Message) channeltest.Emitted {
					u := users[m.From]
					msg := dingtalktest.Msg{From: u, ConversationID: dmConv(u), Text: m.Text}
					chat := u.StaffID
					if m.Group {
						msg.ConversationID, msg.Group, msg.AtBot = groupConv, true, true
						chat = GroupPrefix + groupConv
					}
					frame, id := fake.Deliver(msg)
					mu.Lock()
					frames[id] = frame
					mu.Unlock()
					return channeltest.Emitted{ChatID: chat, MessageID: id}
				},
				EmitMalformed: func() { fake.DeliverRaw(`{"msgId":42,"conversationId":{"x":1},"text":"nope"`) },
				Drop:          fake.Drop,
				Sent: func() []channeltest.Sent {
					var out []channeltest.Sent
					for _, s := range fake.Sent() {
						chat := s.Chat
						if s.Group {
							chat = GroupPrefix + chat
						}
						out = append(out, channeltest.Sent{ChatID: chat, MessageID: s.Key, Text: s.Text, At: s.At})
					}
					return out
				},
				Acked: func(e channeltest.Emitted) bool {
					mu.Lock()
					frame := frames[e.MessageID]
					mu.Unlock()
					return fake.Acked(frame) == 200
				},
			}
		},
	})
}

// recorder records what the channel delivers; mallory is refused.
type recorder struct {
	mu  sync.Mutex
	got []bus.Inbound
}

func (r *recorder) Deliver(_ context.Context, m bus.Inbound) error {
	if m.SenderID == mallory.StaffID {
		return channels.ErrDenied
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, m)
	return nil
}

func (r *recorder) Admits(_, sender string) bool { return sender != mallory.StaffID }

func (r *recorder) all() []bus.Inbound {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]bus.Inbound(nil), r.got...)
}

func (r *recorder) wait(t *testing.T, text string) bus.Inbound {
	t.Helper()
	var got bus.Inbound
	waitFor(t, "inbound "+text, func() bool {
		for _, m := range r.all() {
			if strings.Contains(m.Content, text) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// run starts ch, waits until it is connected, and stops it when the test ends.
func run(t *testing.T, ch *Channel) *recorder {
	t.Helper()
	in := &recorder{}
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
	waitFor(t, "connected", func() bool { return ch.Health().State == channels.StateConnected })
	return in
}

func TestPingDisconnectAndUnknownTopics(t *testing.T) {
	fake := dingtalktest.New(t)
	ch := newChannel(t, fake, nil, "", nil)
	in := run(t, ch)
	ping := fake.Ping(`{"opaque":"abc"}`)
	waitFor(t, "the ping answered with its data", func() bool { return fake.Ponged(ping) })
	ev := fake.Event("/v1.0/some/event")
	waitFor(t, "the event acked 404", func() bool { return fake.Acked(ev) == 404 })
	disc := fake.Disconnect()
	waitFor(t, "the disconnect acked", func() bool { return fake.Acked(disc) == 200 })
	waitFor(t, "a second connection", func() bool { opens, conns, _ := fake.Counts(); return opens >= 2 && conns >= 2 })
	f, _ := fake.Deliver(dingtalktest.Msg{From: alice, ConversationID: dmConv(alice), Text: "after reconnect"})
	in.wait(t, "after reconnect")
	waitFor(t, "ack on the new connection", func() bool { return fake.Acked(f) == 200 })
}

func TestGroupRulesAndIsolation(t *testing.T) {
	fake := dingtalktest.New(t)
	ch := newChannel(t, fake, nil, "", func(c *Config) { c.GroupUserIsolation = true })
	in := run(t, ch)
	unmentioned, _ := fake.Deliver(dingtalktest.Msg{From: alice, ConversationID: groupConv, Group: true, Text: "chatter"})
	fake.Deliver(dingtalktest.Msg{From: alice, ConversationID: groupConv, Group: true, AtBot: true, Text: "for the bot"})
	fake.Deliver(dingtalktest.Msg{From: dingtalktest.User{StaffID: "bob", Nick: "Bob"}, ConversationID: groupConv, Group: true, AtBot: true, Text: "bob asks"})
	a, b := in.wait(t, "for the bot"), in.wait(t, "bob asks")
	if !a.IsGroup || a.ChatID != GroupPrefix+groupConv || a.SenderID != alice.StaffID {
		t.Errorf("group inbound %+v", a)
	}
	if a.Key() == b.Key() || a.Key() != "dingtalk:group:"+groupConv+":"+alice.StaffID {
		t.Errorf("groupUserIsolation keys %q and %q", a.Key(), b.Key())
	}
	waitFor(t, "the unmentioned message acked", func() bool { return fake.Acked(unmentioned) == 200 })
	for _, m := range in.all() {
		if m.Content == "chatter" {
			t.Error("a group message without an @-mention was delivered")
		}
	}
	if _, err := ch.Send(t.Context(), bus.Outbound{ChatID: a.ChatID, Content: "hello group"}); err != nil {
		t.Fatal(err)
	}
	if s := fake.Sent(); len(s) != 1 || !s[0].Group || s[0].Chat != groupConv {
		t.Errorf("sent %+v, want one group message", s)
	}
}

func TestOpenPolicyAndDisablePrivateChat(t *testing.T) {
	fake := dingtalktest.New(t)
	ch := newChannel(t, fake, nil, "", func(c *Config) { c.GroupPolicy, c.DisablePrivateChat = PolicyOpen, true })
	in := run(t, ch)
	dm, _ := fake.Deliver(dingtalktest.Msg{From: alice, ConversationID: dmConv(alice), Text: "private hello"})
	fake.Deliver(dingtalktest.Msg{From: alice, ConversationID: groupConv, Group: true, Text: "no mention needed"})
	in.wait(t, "no mention needed")
	waitFor(t, "the ignored DM acked", func() bool { return fake.Acked(dm) == 200 })
	for _, m := range in.all() {
		if m.Content == "private hello" {
			t.Error("a direct message was delivered with disablePrivateChat")
		}
	}
}

func TestDuplicateDeliveredOnce(t *testing.T) {
	fake := dingtalktest.New(t)
	ch := newChannel(t, fake, nil, "", nil)
	in := run(t, ch)
	raw := `{"msgId":"same-1","conversationId":"c1","conversationType":"1","senderStaffId":"manager4021","msgtype":"text","text":{"content":"twice"}}`
	f1, f2 := fake.DeliverRaw(raw), fake.DeliverRaw(raw)
	fake.Deliver(dingtalktest.Msg{From: alice, ConversationID: dmConv(alice), Text: "marker"})
	in.wait(t, "marker")
	waitFor(t, "both frames acked", func() bool { return fake.Acked(f1) == 200 && fake.Acked(f2) == 200 })
	n := 0
	for _, m := range in.all() {
		if m.Content == "twice" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("a redelivered message arrived %d times, want once", n)
	}
}

func TestPictureDownloadOnlyForAllowedSenders(t *testing.T) {
	fake := dingtalktest.New(t)
	dir := t.TempDir()
	ch := newChannel(t, fake, nil, dir, nil)
	in := run(t, ch)
	png := []byte("\x89PNG\r\n\x1a\nfake image bytes")
	fake.AddFile("dl-code-1", png)
	fake.Deliver(dingtalktest.Msg{From: alice, ConversationID: dmConv(alice), MsgType: "picture", Content: map[string]any{"downloadCode": "dl-code-1"}})
	got := in.wait(t, "[image]")
	if len(got.Media) != 1 {
		t.Fatalf("media %+v, want one picture", got.Media)
	}
	data, err := os.ReadFile(got.Media[0].Path)
	if err != nil || string(data) != string(png) {
		t.Errorf("saved file %q (%v)", data, err)
	}
	fake.Deliver(dingtalktest.Msg{From: mallory, ConversationID: dmConv(mallory), MsgType: "file", Content: map[string]any{"downloadCode": "dl-code-1", "fileName": "x.pdf"}})
	fake.Deliver(dingtalktest.Msg{From: alice, ConversationID: dmConv(alice), MsgType: "audio", Content: map[string]any{"downloadCode": "missing", "recognition": "spoken words"}})
	voice := in.wait(t, "spoken words")
	if len(voice.Media) != 0 || !strings.Contains(voice.Content, "download failed") {
		t.Errorf("voice %+v, want the recognition and a failure note", voice)
	}
	entries, _ := os.ReadDir(dir + "/dingtalk")
	if len(entries) != 1 {
		t.Errorf("%d files in the media folder, want only alice's picture", len(entries))
	}
}

func TestTokenRefreshAndErrors(t *testing.T) {
	fake := dingtalktest.New(t)
	ch := newChannel(t, fake, nil, "", nil)
	ctx := t.Context()
	if _, err := ch.Send(ctx, bus.Outbound{ChatID: alice.StaffID, Content: "# Hello\n~~old~~ new"}); err != nil {
		t.Fatal(err)
	}
	fake.ExpireToken()
	if _, err := ch.Send(ctx, bus.Outbound{ChatID: alice.StaffID, Content: "second"}); err != nil {
		t.Fatalf("send after the token expired: %v", err)
	}
	if _, _, tokens := fake.Counts(); tokens != 2 {
		t.Errorf("%d tokens fetched, want 2", tokens)
	}
	s := fake.Sent()
	if len(s) != 2 || s[0].Title != "Hello" || s[0].Text != "# Hello\nold new" || s[0].Group {
		t.Errorf("sent %+v", s)
	}
	fake.FailNext(400)
	_, err := ch.Send(ctx, bus.Outbound{ChatID: alice.StaffID, Content: "x"})
	var pe *channels.PermanentError
	if !errors.As(err, &pe) {
		t.Errorf("400: %v, want PermanentError", err)
	}
	fake.FailNext(429)
	var ra *channels.RetryAfterError
	if _, err := ch.Send(ctx, bus.Outbound{ChatID: alice.StaffID, Content: "x"}); !errors.As(err, &ra) {
		t.Errorf("429: %v, want RetryAfterError", err)
	}
}

func TestBadCredentialsFailWithoutLeaking(t *testing.T) {
	fake := dingtalktest.New(t)
	ch := newChannel(t, fake, nil, "", func(c *Config) { c.ClientSecret = "wrong-secret-value" })
	err := ch.Run(t.Context(), &recorder{})
	if err == nil || strings.Contains(err.Error(), "wrong-secret-value") || !strings.Contains(err.Error(), "clientSecret") {
		t.Fatalf("Run = %v, want a fatal error naming clientSecret without its value", err)
	}
	if h := ch.Health(); h.State != channels.StateFailed || strings.Contains(h.LastError, "wrong-secret-value") {
		t.Errorf("health %+v", h)
	}
}

func TestConfig(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no id", func(c *Config) { c.ClientID = "" }, "clientId is required"},
		{"no secret", func(c *Config) { c.ClientSecret = " " }, "clientSecret is required"},
		{"policy", func(c *Config) { c.GroupPolicy = "sometimes" }, "groupPolicy"},
		{"apiBase", func(c *Config) { c.APIBase = "ftp://x" }, "apiBase"},
		{"oapiBase", func(c *Config) { c.OAPIBase = "nohost" }, "oapiBase"},
		{"media", func(c *Config) { c.MaxMediaBytes = -1 }, "maxMediaBytes"},
	} {
		c := DefaultConfig()
		c.ClientID, c.ClientSecret = "id", "secret"
		tt.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate = %v, want an error about %s", tt.name, err, tt.want)
		}
	}
	c := DefaultConfig()
	c.ClientID, c.ClientSecret = "id", "secret"
	if err := c.Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}
