package line

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/line/linetest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

const (
	alice   = "U1111111111111111111111111111a11c"
	mallory = "U2222222222222222222222222222ma11"
	group   = "C3333333333333333333333333333gr0p"
)

// setup starts the fake and the channel, with the channel's webhook
// handler served where the fake delivers events.
func setup(t *testing.T, log *slog.Logger, deps channels.Deps, edit func(*Config)) (*linetest.Server, *Channel) {
	t.Helper()
	f := linetest.New(t)
	c := DefaultConfig()
	c.Enabled, c.AllowFrom = true, []string{"*"}
	c.ChannelSecret, c.ChannelAccessToken = linetest.Secret, linetest.Token
	c.APIBase, c.DataAPIBase = f.URL, f.URL
	if edit != nil {
		edit(&c)
	}
	deps.Log = log
	ch, err := New(c, deps)
	if err != nil {
		t.Fatal(err)
	}
	ch.backoffMin, ch.backoffMax = 20*time.Millisecond, 200*time.Millisecond
	mux := http.NewServeMux()
	mux.Handle(ch.WebhookPath(), ch.WebhookHandler())
	gw := httptest.NewServer(mux)
	t.Cleanup(gw.Close)
	f.WebhookURL = gw.URL + ch.WebhookPath()
	t.Cleanup(func() {
		if v := f.Violations(); len(v) > 0 {
			t.Errorf("protocol violations: %q", v)
		}
	})
	return f, ch
}

func TestConformance(t *testing.T) {
	users := map[string]string{channeltest.Alice: alice, channeltest.Mallory: mallory}
	channeltest.Run(t, channeltest.Harness{
		Skip: map[string]string{channeltest.CheckDropConnection: "LINE delivers by webhook: there is no connection to drop"},
		Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
			f, ch := setup(t, env.Log, channels.Deps{Paths: configs.Paths{Media: env.MediaDir}}, nil)
			return channeltest.Fixture{
				Channel:  ch,
				SenderID: func(user string) string { return users[user] },
				Emit: func(m channeltest.Message) channeltest.Emitted {
					// LINE sends webhooks to a running bot; before Run
					// the handler answers 503.
					waitfor.Within(t, "line connected", 10*time.Second, func() bool { return ch.Health().State == channels.StateConnected })
					msg := linetest.Message{From: users[m.From], Text: m.Text}
					if m.Group {
						msg.Group, msg.MentionBot = group, true
					}
					chat, id := f.Emit(msg)
					return channeltest.Emitted{ChatID: chat, MessageID: id}
				},
				EmitMalformed: func() {
					f.EmitRaw([]byte(`{"destination":"` + linetest.BotUserID + `","events":[{"type":"message","source":42,"message":"nope"}]}`))
				},
				Acked: func(e channeltest.Emitted) bool { return f.Acked(e.MessageID) == http.StatusOK },
				Sent: func() []channeltest.Sent {
					var out []channeltest.Sent
					for _, s := range f.Sent() {
						out = append(out, channeltest.Sent{ChatID: s.ChatID, MessageID: s.MessageID, Text: s.Text, At: s.At})
					}
					return out
				},
			}
		},
	})
}

// A request whose signature does not match its body is refused with 400
// before it is parsed, whether the body is an event or garbage; one
// without a signature too. Nothing reaches the gateway.
func TestWebhookSignature(t *testing.T) {
	f, ch := setup(t, nil, channels.Deps{}, nil)
	rec := &channeltest.Recorder{}
	channeltest.Start(t, ch, rec)
	body := []byte(`{"destination":"x","events":[{"type":"message","mode":"active","timestamp":1,"webhookEventId":"01X","source":{"type":"user","userId":"` + alice + `"},"replyToken":"r","message":{"type":"text","id":"1","text":"forged"}}]}`)
	for name, sig := range map[string]string{
		"wrong secret":   linetest.Sign("another-secret", body),
		"missing":        "",
		"not base64":     "%%%",
		"other body":     linetest.Sign(linetest.Secret, append(body, ' ')),
		"garbage, wrong": linetest.Sign("x", []byte("{not json")),
	} {
		if code := f.Post(body, sig); code != http.StatusBadRequest {
			t.Errorf("%s signature: HTTP %d, want 400", name, code)
		}
	}
	if code := f.Post([]byte("{not json"), "AAAA"); code != http.StatusBadRequest {
		t.Errorf("garbage with a bad signature: HTTP %d, want 400", code)
	}
	f.Emit(linetest.Message{From: alice, Text: "genuine"})
	rec.Wait(t, "genuine")
	for _, m := range rec.All() {
		if m.Content == "forged" {
			t.Error("a forged event was delivered")
		}
	}
}

// Before Run (and after) the webhook answers 503 so LINE can retry.
func TestWebhookNotRunning(t *testing.T) {
	f, _ := setup(t, nil, channels.Deps{}, nil)
	body := []byte(`{"destination":"x","events":[]}`)
	if code := f.Post(body, linetest.Sign(linetest.Secret, body)); code != http.StatusServiceUnavailable {
		t.Errorf("HTTP %d before Run, want 503", code)
	}
}

// The first answer to a message uses its reply token (quoting it), later
// ones are pushed; a reply token that expired falls back to a push; a
// push repeated with the same idempotency key shows once.
func TestReplyThenPush(t *testing.T) {
	f, ch := setup(t, nil, channels.Deps{}, nil)
	rec := &channeltest.Recorder{}
	ctx := channeltest.Start(t, ch, rec)
	f.Emit(linetest.Message{From: alice, Text: "question"})
	in := rec.Wait(t, "question")
	for _, text := range []string{"first part", "second part"} {
		if _, err := ch.Send(ctx, bus.Outbound{ChatID: in.ChatID, Content: text, ReplyTo: in.MessageID, Metadata: in.Metadata}); err != nil {
			t.Fatal(err)
		}
	}
	sent := f.Sent()
	if len(sent) != 2 || !sent[0].Reply || sent[0].QuoteToken == "" || sent[1].Reply || sent[1].Text != "second part" {
		t.Fatalf("sent %+v, want a quoting reply then a push", sent)
	}

	// LINE expires the next token before the channel thinks it is stale.
	f.ReplyTTL = 0
	f.Emit(linetest.Message{From: alice, Text: "late one"})
	late := rec.Wait(t, "late one")
	if _, err := ch.Send(ctx, bus.Outbound{ChatID: late.ChatID, Content: "late answer", Metadata: late.Metadata}); err != nil {
		t.Fatal(err)
	}
	if s := f.Sent(); len(s) != 3 || s[2].Reply || s[2].Text != "late answer" {
		t.Fatalf("after an expired token: %+v, want a push", s[2:])
	}

	for range 2 {
		if _, err := ch.Send(ctx, bus.Outbound{ChatID: alice, Content: "exactly once", IdempotencyKey: "out-7/0"}); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, s := range f.Sent() {
		if s.Text == "exactly once" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("a push repeated with its idempotency key showed %d times", n)
	}
}

// A text over 5,000 UTF-16 units although under 5,000 characters (emoji)
// goes out as two message objects of one call.
func TestEmojiSplit(t *testing.T) {
	f, ch := setup(t, nil, channels.Deps{}, nil)
	rec := &channeltest.Recorder{}
	ctx := channeltest.Start(t, ch, rec)
	f.Emit(linetest.Message{From: alice, Text: "emoji please"})
	in := rec.Wait(t, "emoji please")
	text := strings.Repeat("😀", 3000)
	if _, err := ch.Send(ctx, bus.Outbound{ChatID: in.ChatID, Content: text, Metadata: in.Metadata}); err != nil {
		t.Fatal(err)
	}
	sent := f.Sent()
	if len(sent) != 2 || sent[0].Text+sent[1].Text != text {
		t.Fatalf("%d messages, want the text in 2", len(sent))
	}
}

// Groups: without a mention nothing is delivered under the default
// policy; with one, the mention is removed. Typing shows the loading
// animation in one-on-one chats and nothing in groups.
func TestGroupsAndTyping(t *testing.T) {
	f, ch := setup(t, nil, channels.Deps{}, nil)
	rec := &channeltest.Recorder{}
	ctx := channeltest.Start(t, ch, rec)
	_, quiet := f.Emit(linetest.Message{From: alice, Group: group, Text: "just us talking"})
	f.Emit(linetest.Message{From: alice, Group: group, Text: "what time is it?", MentionBot: true})
	in := rec.Wait(t, "what time")
	waitfor.Within(t, "the unmentioned message acknowledged", 10*time.Second, func() bool { return f.Acked(quiet) == http.StatusOK })
	if all := rec.All(); len(all) != 1 || all[0].Content != "what time is it?" || !all[0].IsGroup || all[0].ChatID != group {
		t.Fatalf("delivered %+v", all)
	}
	if err := ch.Typing(ctx, in.ChatID, in.Metadata); err != nil {
		t.Fatal(err)
	}
	if err := ch.Typing(ctx, alice, nil); err != nil {
		t.Fatal(err)
	}
	if l := f.Loading(); len(l) != 1 || l[0] != alice {
		t.Errorf("loading animations %q, want one for alice", l)
	}
}

// Images and files are downloaded from the content endpoint; a sender the
// gate refuses gets nothing downloaded.
func TestContentIn(t *testing.T) {
	dir := t.TempDir()
	f, ch := setup(t, nil, channels.Deps{Paths: configs.Paths{Media: dir}}, nil)
	rec := &channeltest.Recorder{Refuse: func(id string) bool { return id == mallory }}
	channeltest.Start(t, ch, rec)
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 64)...)
	f.Emit(linetest.Message{From: mallory, Image: png})
	f.Emit(linetest.Message{From: alice, File: []byte("%PDF-1.4"), FileName: "plan.pdf"})
	f.Emit(linetest.Message{From: alice, Image: png})
	waitfor.Within(t, "three deliveries", 10*time.Second, func() bool { return len(rec.All()) == 3 })
	var images, files int
	for _, m := range rec.All() {
		switch {
		case m.SenderID == mallory:
			if len(m.Media) != 0 || !strings.Contains(m.Content, "not downloaded") {
				t.Errorf("refused sender: %+v", m)
			}
		case len(m.Media) == 1 && m.Media[0].IsImage():
			images++
			if got, _ := os.ReadFile(m.Media[0].Path); !bytes.Equal(got, png) {
				t.Error("image content differs")
			}
		case len(m.Media) == 1 && m.Media[0].Name == "plan.pdf":
			files++
		}
	}
	if images != 1 || files != 1 {
		t.Errorf("%d images and %d files, want 1 each", images, files)
	}
	if entries, _ := os.ReadDir(dir + "/line"); len(entries) != 2 {
		t.Errorf("%d files saved, want 2", len(entries))
	}
}

// A rejected access token stops the channel with a reason naming it.
func TestBadTokenIsFatal(t *testing.T) {
	_, ch := setup(t, nil, channels.Deps{}, func(c *Config) { c.ChannelAccessToken = "revoked-token" })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := ch.Run(ctx, &channeltest.Recorder{})
	if !channels.IsFatal(err) || !strings.Contains(err.Error(), "access token") || strings.Contains(err.Error(), "revoked-token") {
		t.Fatalf("Run = %v, want a fatal error about the token without it", err)
	}
}

func TestSendErrors(t *testing.T) {
	_, ch := setup(t, nil, channels.Deps{}, nil)
	rec := &channeltest.Recorder{}
	ctx := channeltest.Start(t, ch, rec)
	_, err := ch.Send(ctx, bus.Outbound{ChatID: "Cunknown", Content: "hi"})
	var perm *channels.PermanentError
	if !errors.As(err, &perm) {
		t.Errorf("push to an unknown chat: %v, want a PermanentError", err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.ChannelSecret = "" }, "channelSecret is required"},
		{func(c *Config) { c.ChannelAccessToken = "" }, "channelAccessToken is required"},
		{func(c *Config) { c.WebhookPath = "line" }, "webhookPath"},
		{func(c *Config) { c.APIBase = "api.line.me" }, "apiBase"},
		{func(c *Config) { c.GroupPolicy = "everyone" }, "groupPolicy"},
	} {
		c := DefaultConfig()
		c.ChannelSecret, c.ChannelAccessToken = "s", "t"
		tc.edit(&c)
		if _, err := New(c, channels.Deps{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want an error containing %q", err, tc.want)
		}
	}
}

func TestSplitUTF16(t *testing.T) {
	for _, tc := range []struct {
		text  string
		limit int
		want  []string
	}{
		{"abcdef", 10, []string{"abcdef"}},
		{"abcdef", 3, []string{"abc", "def"}},
		{"ab😀cd", 3, []string{"ab", "😀c", "d"}},
		{"aaaaaaaaa\nbbbbbbb", 11, []string{"aaaaaaaaa\n", "bbbbbbb"}},
	} {
		got := splitUTF16(tc.text, tc.limit)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("splitUTF16(%q, %d) = %q, want %q", tc.text, tc.limit, got, tc.want)
		}
	}
}
