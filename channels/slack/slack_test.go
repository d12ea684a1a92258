package slack

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/slack/slacktest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

const (
	aliceID   = "UALICE"
	malloryID = "UMALLORY"
	general   = "CGENERAL"
)

func dm(user string) string { return "D" + strings.TrimPrefix(user, "U") }

// newChannel builds a channel against fake with short timings.
func newChannel(t *testing.T, fake *slacktest.Server, log *slog.Logger, edit func(*Config)) *Channel {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Enabled, cfg.AllowFrom = true, []string{"*"}
	cfg.AppToken, cfg.BotToken, cfg.APIBase = slacktest.AppToken, slacktest.BotToken, fake.APIBase()
	if edit != nil {
		edit(&cfg)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ch, err := New(cfg, channels.Deps{Log: log})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ch.editInterval = 250 * time.Millisecond
	ch.backoffMin, ch.backoffMax = 10*time.Millisecond, 100*time.Millisecond
	return ch
}

func TestConformance(t *testing.T) {
	channeltest.Run(t, channeltest.Harness{
		Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
			fake := slacktest.New(t)
			ch := newChannel(t, fake, env.Log, nil)
			users := map[string]string{channeltest.Alice: aliceID, channeltest.Mallory: malloryID}
			var mu sync.Mutex
			envelopes := map[channeltest.Emitted]string{}
			return channeltest.Fixture{
				Channel:  ch,
				SenderID: func(user string) string { return users[user] },
				Emit: func(m channeltest.Message) channeltest.Emitted {
					u := users[m.From]
					e := slacktest.Event{Channel: dm(u), ChannelType: "im", User: u, Text: m.Text}
					if m.Group {
						e = slacktest.Event{Type: "app_mention", Channel: general, User: u, Text: "<@" + slacktest.BotUserID + "> " + m.Text}
					}
					env, ts := fake.Push(e)
					em := channeltest.Emitted{ChatID: e.Channel, MessageID: ts}
					mu.Lock()
					envelopes[em] = env
					mu.Unlock()
					return em
				},
				EmitMalformed: func() {
					fake.PushRaw(`{"envelope_id":"bad-1","type":"events_api","payload":{"type":"event_callback","event":{"type":"message","channel":42,"user":["x"],"text":7,"ts":1}}}`)
				},
				Drop: fake.Drop,
				Sent: func() []channeltest.Sent {
					var out []channeltest.Sent
					for _, s := range fake.Sent() {
						out = append(out, channeltest.Sent{ChatID: s.Channel, MessageID: s.TS, Edit: s.Edit, Text: s.Rendered, At: s.At})
					}
					return out
				},
				Acked: func(e channeltest.Emitted) bool {
					mu.Lock()
					env, ok := envelopes[e]
					mu.Unlock()
					return ok && fake.Acked(env)
				},
			}
		},
	})
}

// inbox records what the channel delivers; hold, when set, blocks Deliver.
type inbox struct {
	mu   sync.Mutex
	got  []bus.Inbound
	hold chan struct{}
	// holding counts the Deliver calls that waited on hold.
	holding atomic.Int32
	deny    string
	// stranger is a sender Admits refuses (Deliver still records them, so
	// a test can see what arrived).
	stranger string
}

// Admits implements channels.Admitter.
func (in *inbox) Admits(_, senderID string) bool { return senderID != in.stranger }

func (in *inbox) Deliver(ctx context.Context, m bus.Inbound) error {
	in.mu.Lock()
	hold := in.hold
	in.mu.Unlock()
	if hold != nil {
		in.holding.Add(1)
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if m.SenderID == in.deny {
		return channels.ErrDenied
	}
	in.got = append(in.got, m)
	return nil
}

func (in *inbox) all() []bus.Inbound {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]bus.Inbound(nil), in.got...)
}

func (in *inbox) wait(t *testing.T, text string) bus.Inbound {
	t.Helper()
	var got bus.Inbound
	waitfor.True(t, "inbound "+text, func() bool {
		for _, m := range in.all() {
			if strings.Contains(m.Content, text) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

// run starts ch with in and stops it when the test ends.
func run(t *testing.T, ch *Channel, in *inbox) {
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
			t.Error("Run did not return")
		}
	})
}

func TestThreadSessions(t *testing.T) {
	fake := slacktest.New(t)
	ch := newChannel(t, fake, nil, nil)
	in := &inbox{}
	run(t, ch, in)

	_, top := fake.Push(slacktest.Event{Type: "app_mention", Channel: general, User: aliceID, Text: "<@UBOT> first question"})
	first := in.wait(t, "first question")
	if want := "slack:" + general + ":thread:" + top; first.SessionKey != want {
		t.Errorf("SessionKey = %q, want %q", first.SessionKey, want)
	}
	if !first.IsGroup || first.Content != "first question" {
		t.Errorf("inbound = %+v", first)
	}
	fake.Push(slacktest.Event{Type: "app_mention", Channel: general, User: aliceID, Text: "<@UBOT> follow-up", ThreadTS: top})
	if got := in.wait(t, "follow-up"); got.SessionKey != first.SessionKey {
		t.Errorf("a reply in the thread got session %q, want %q", got.SessionKey, first.SessionKey)
	}
	_, other := fake.Push(slacktest.Event{Type: "app_mention", Channel: general, User: aliceID, Text: "<@UBOT> new topic"})
	if got := in.wait(t, "new topic"); got.SessionKey != "slack:"+general+":thread:"+other {
		t.Errorf("a new top-level message got session %q", got.SessionKey)
	}

	// The answer goes into the thread and marks the question ✅.
	_, err := ch.Send(t.Context(), bus.Outbound{Channel: "slack", ChatID: general, Content: "answer", ReplyTo: first.MessageID, Metadata: first.Metadata, Final: true})
	if err != nil {
		t.Fatal(err)
	}
	sent := fake.Sent()
	if last := sent[len(sent)-1]; last.ThreadTS != top {
		t.Errorf("reply thread_ts = %q, want %q", last.ThreadTS, top)
	}
	waitfor.True(t, "reactions", func() bool {
		var eyes, check bool
		for _, r := range fake.Reactions() {
			eyes = eyes || r.TS == top && r.Name == "eyes"
			check = check || r.TS == top && r.Name == "white_check_mark"
		}
		return eyes && check
	})

	// Direct messages are not threaded by default and are not groups.
	fake.Push(slacktest.Event{Channel: dm(aliceID), ChannelType: "im", User: aliceID, Text: "hi in private"})
	if got := in.wait(t, "hi in private"); got.IsGroup || got.SessionKey != "" {
		t.Errorf("DM inbound = %+v", got)
	}
}

func TestReplyInThreadOff(t *testing.T) {
	fake := slacktest.New(t)
	no := false
	ch := newChannel(t, fake, nil, func(c *Config) { c.ReplyInThread = &no; c.Reactions = &no })
	in := &inbox{}
	run(t, ch, in)
	env, _ := fake.Push(slacktest.Event{Type: "app_mention", Channel: general, User: aliceID, Text: "<@UBOT> flat"})
	got := in.wait(t, "flat")
	if got.SessionKey != "" || got.Metadata["thread_ts"] != "" {
		t.Errorf("inbound = %+v, want no thread", got)
	}
	if _, err := ch.Send(t.Context(), bus.Outbound{ChatID: general, Content: "x", Metadata: got.Metadata, Final: true}); err != nil {
		t.Fatal(err)
	}
	if s := fake.Sent(); s[0].ThreadTS != "" {
		t.Errorf("thread_ts = %q, want none", s[0].ThreadTS)
	}
	// 👀 would be added before the envelope is acknowledged, ✅ within Send.
	waitfor.True(t, "the mention acknowledged", func() bool { return fake.Acked(env) })
	if r := fake.Reactions(); len(r) != 0 {
		t.Errorf("reactions = %v, want none", r)
	}
}

func TestGroupPolicy(t *testing.T) {
	for _, tc := range []struct {
		policy channels.GroupPolicy
		allow  []string
		want   []string
	}{
		{channels.GroupMention, nil, []string{"mentioned by event", "mentioned in text"}},
		{channels.GroupOpen, nil, []string{"mentioned by event", "mentioned in text", "plain chatter", "other channel"}},
		{channels.GroupAllowlist, []string{general}, []string{"mentioned by event", "mentioned in text", "plain chatter"}},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			fake := slacktest.New(t)
			ch := newChannel(t, fake, nil, func(c *Config) { c.GroupPolicy, c.AllowChannels = tc.policy, tc.allow })
			in := &inbox{}
			run(t, ch, in)
			fake.Push(slacktest.Event{Type: "app_mention", Channel: general, User: aliceID, Text: "<@UBOT> mentioned by event"})
			// Slack sends the same mention as a message event too: one inbound.
			_, ts := fake.Push(slacktest.Event{Type: "app_mention", Channel: general, User: aliceID, Text: "<@UBOT> mentioned in text"})
			fake.PushAs("dup", ts, slacktest.Event{Channel: general, ChannelType: "channel", User: aliceID, Text: "<@UBOT> mentioned in text"})
			fake.Push(slacktest.Event{Channel: general, ChannelType: "channel", User: aliceID, Text: "plain chatter"})
			fake.Push(slacktest.Event{Channel: "COTHER", ChannelType: "channel", User: aliceID, Text: "other channel"})
			fake.Push(slacktest.Event{Channel: general, ChannelType: "channel", User: "UB", BotID: "B2", Text: "<@UBOT> from a bot"})
			end, _ := fake.Push(slacktest.Event{Channel: dm(aliceID), ChannelType: "im", User: aliceID, Text: "the end"})
			in.wait(t, "the end")
			waitfor.True(t, "all acked", func() bool { return fake.Acked(end) && fake.Acked("dup") })
			var got []string
			for _, m := range in.all() {
				if m.Content != "the end" {
					got = append(got, m.Content)
				}
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("delivered %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAckAfterDelivery(t *testing.T) {
	fake := slacktest.New(t)
	ch := newChannel(t, fake, nil, nil)
	in := &inbox{hold: make(chan struct{}), deny: malloryID}
	run(t, ch, in)
	env, _ := fake.Push(slacktest.Event{Channel: dm(aliceID), ChannelType: "im", User: aliceID, Text: "held"})
	// Deliver has the message and has not returned: an adapter that acks
	// first would have written the ack before calling it.
	waitfor.True(t, "Deliver called", func() bool { return in.holding.Load() == 1 })
	if fake.Acked(env) {
		t.Fatal("acknowledged before Deliver returned")
	}
	close(in.hold)
	waitfor.True(t, "ack", func() bool { return fake.Acked(env) })
	// A denied sender is acknowledged too, and gets no 👀.
	denied, ts := fake.Push(slacktest.Event{Channel: dm(malloryID), ChannelType: "im", User: malloryID, Text: "let me in"})
	waitfor.True(t, "ack of denied", func() bool { return fake.Acked(denied) })
	for _, r := range fake.Reactions() {
		if r.TS == ts {
			t.Errorf("denied message got reaction %q", r.Name)
		}
	}
}

func TestSendErrors(t *testing.T) {
	fake := slacktest.New(t)
	ch := newChannel(t, fake, nil, nil)
	out := bus.Outbound{ChatID: general, Content: "hello"}

	fake.FailPost("", 7)
	_, err := ch.Send(t.Context(), out)
	var ra *channels.RetryAfterError
	if !errors.As(err, &ra) || ra.After != 7*time.Second {
		t.Errorf("ratelimited: err = %v, want RetryAfterError of 7s", err)
	}
	for _, code := range []string{"channel_not_found", "not_in_channel"} {
		fake.FailPost(code, 0)
		_, err = ch.Send(t.Context(), out)
		var pe *channels.PermanentError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), code) {
			t.Errorf("%s: err = %v, want PermanentError", code, err)
		}
	}
	fake.FailPost("internal_error", 0)
	_, err = ch.Send(t.Context(), out)
	var pe *channels.PermanentError
	if err == nil || errors.As(err, &pe) || errors.As(err, &ra) {
		t.Errorf("internal_error: err = %v, want a plain (retryable) error", err)
	}
	if strings.Contains(err.Error(), slacktest.BotToken) {
		t.Errorf("error leaks the token: %v", err)
	}
	ref, err := ch.Send(t.Context(), out)
	if err != nil || ref.MessageID == "" {
		t.Fatalf("Send = %+v, %v", ref, err)
	}
	if err := ch.Edit(t.Context(), ref, bus.Outbound{ChatID: general, Content: "**edited**"}); err != nil {
		t.Fatal(err)
	}
	if s := fake.Sent(); s[len(s)-1].Text != "*edited*" || !s[len(s)-1].Edit {
		t.Errorf("edit = %+v", s[len(s)-1])
	}
}

func TestDisconnectRefresh(t *testing.T) {
	fake := slacktest.New(t)
	ch := newChannel(t, fake, nil, nil)
	in := &inbox{}
	run(t, ch, in)
	fake.Push(slacktest.Event{Channel: dm(aliceID), ChannelType: "im", User: aliceID, Text: "one"})
	in.wait(t, "one")
	fake.Disconnect()
	waitfor.True(t, "a second connection", func() bool { return fake.Opens() >= 2 })
	fake.Push(slacktest.Event{Channel: dm(aliceID), ChannelType: "im", User: aliceID, Text: "two"})
	in.wait(t, "two")
	if h := ch.Health(); h.State != channels.StateConnected {
		t.Errorf("Health = %+v", h)
	}
}

func TestConfig(t *testing.T) {
	ok := DefaultConfig()
	ok.AppToken, ok.BotToken = "xapp-1", "xoxb-1"
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := ok
	bad.AppToken, bad.BotToken, bad.GroupPolicy = "xoxb-wrong", "", channels.GroupAllowlist
	err := bad.Validate()
	for _, key := range []string{"appToken", "botToken", "allowChannels"} {
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("Validate() = %v, want it to name %s", err, key)
		}
	}
	ch, err := New(Config{AppToken: "xapp-1", BotToken: "xoxb-1"}, channels.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if !ch.cfg.threads() || !ch.cfg.reactions() || ch.cfg.GroupPolicy != channels.GroupMention || ch.MessageLimit() != 4000 || ch.EditInterval() != time.Second {
		t.Errorf("defaults: %+v", ch.cfg)
	}
}

func TestSendMedia(t *testing.T) {
	fake := slacktest.New(t)
	ch := newChannel(t, fake, nil, nil)
	path := t.TempDir() + "/report.txt"
	if err := os.WriteFile(path, []byte("file body"), 0o600); err != nil {
		t.Fatal(err)
	}
	ref, err := ch.SendMedia(t.Context(), bus.Outbound{
		ChatID: general, Content: "here you go", Final: true, ReplyTo: "1.1",
		Metadata: bus.Metadata{"thread_ts": "1.1"},
		Media:    []bus.Media{{Path: path}, {URL: "https://example.com/x.png", Name: "x.png"}},
	})
	if err != nil || ref.MessageID == "" {
		t.Fatalf("SendMedia = %+v, %v", ref, err)
	}
	files := fake.Files()
	if len(files) != 1 || files[0].Name != "report.txt" || string(files[0].Data) != "file body" || files[0].Channel != general || files[0].ThreadTS != "1.1" {
		t.Errorf("files = %+v", files)
	}
	sent := fake.Sent()
	if len(sent) != 2 || sent[0].Text != "here you go" || !strings.Contains(sent[1].Text, "https://example.com/x.png|x.png") {
		t.Errorf("sent = %+v", sent)
	}
}

// A rejected token stops the channel for good: a bad bot token fails
// auth.test, a bad app token fails apps.connections.open.
func TestRejectedTokenIsFatal(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*Config)
	}{
		{"bot token", func(c *Config) { c.BotToken = "xoxb-not-the-token" }},
		{"app token", func(c *Config) { c.AppToken = "xapp-not-the-token" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := slacktest.New(t)
			ch := newChannel(t, fake, nil, tt.edit)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := ch.Run(ctx, &channeltest.Recorder{})
			if !errors.Is(err, ErrUnauthorized) || !channels.IsFatal(err) || !strings.Contains(err.Error(), "invalid_auth") {
				t.Fatalf("Run = %v, want ErrUnauthorized (invalid_auth) as a fatal error", err)
			}
			if h := ch.Health(); h.State != channels.StateFailed || strings.Contains(h.LastError, "not-the-token") {
				t.Errorf("Health = %+v, want failed without the token", h)
			}
		})
	}
}
