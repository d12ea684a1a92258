package onebot

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/onebot/onebottest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

const (
	alice   int64 = 20001
	mallory int64 = 20002
	group   int64 = 30001
)

// setup starts a fake and a channel against it, forward or reverse. In
// reverse mode the channel's handler is served on a local server the fake
// dials.
func setup(t *testing.T, reverse bool, log *slog.Logger, deps channels.Deps, edit func(*Config)) (*onebottest.Server, *Channel, string) {
	t.Helper()
	f := onebottest.New(t, 0)
	c := DefaultConfig()
	c.Enabled, c.AllowFrom = true, []string{"*"}
	c.AccessToken = onebottest.Token
	if reverse {
		c.Mode = ModeReverse
	} else {
		c.URL = f.URL
	}
	if edit != nil {
		edit(&c)
	}
	deps.Log = log
	ch, err := New(c, deps)
	if err != nil {
		t.Fatal(err)
	}
	ch.backoffMin, ch.backoffMax = 20*time.Millisecond, 200*time.Millisecond
	ch.watchEvery = 10 * time.Millisecond
	endpoint := ""
	if reverse {
		mux := http.NewServeMux()
		mux.Handle(ch.WebhookPath(), ch.WebhookHandler())
		gw := httptest.NewServer(mux)
		t.Cleanup(gw.Close)
		endpoint = "ws" + strings.TrimPrefix(gw.URL, "http") + ch.WebhookPath()
	}
	t.Cleanup(func() {
		if v := f.Violations(); len(v) > 0 {
			t.Errorf("protocol violations: %q", v)
		}
	})
	return f, ch, endpoint
}

func conformance(t *testing.T, reverse bool) {
	users := map[string]int64{channeltest.Alice: alice, channeltest.Mallory: mallory}
	channeltest.Run(t, channeltest.Harness{
		Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
			f, ch, endpoint := setup(t, reverse, env.Log, channels.Deps{Paths: configs.Paths{Media: env.MediaDir}}, nil)
			if reverse {
				// The fake stops dialling (and its connection) at cleanup,
				// which runs before the suite's own checks end Run.
				f.DialReverse(endpoint, onebottest.Token, 20*time.Millisecond)
			}
			return channeltest.Fixture{
				Channel:  ch,
				SenderID: func(user string) string { return strconv.FormatInt(users[user], 10) },
				Emit: func(m channeltest.Message) channeltest.Emitted {
					msg := onebottest.Message{From: users[m.From], Text: m.Text}
					if m.Group {
						msg.Group, msg.AtBot = group, true
					}
					chat, id := f.Emit(msg)
					return channeltest.Emitted{ChatID: chat, MessageID: id}
				},
				EmitMalformed: func() {
					f.EmitRaw([]byte(`{"post_type":"message","message_type":"private","message_id":{"x":1},"user_id":"20001","message":42}`))
					f.EmitRaw([]byte(`{not json`))
				},
				Drop: f.Drop,
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

func TestConformanceForward(t *testing.T) { conformance(t, false) }
func TestConformanceReverse(t *testing.T) { conformance(t, true) }

// A forward connection whose access token the implementation rejects stops
// the channel with a FatalError that does not contain the token.
func TestForwardWrongToken(t *testing.T) {
	_, ch, _ := setup(t, false, nil, channels.Deps{}, func(c *Config) { c.AccessToken = "not-the-token-31337" })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := ch.Run(ctx, &channeltest.Recorder{})
	if !channels.IsFatal(err) || !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("Run = %v, want a FatalError wrapping ErrUnauthorized", err)
	}
	if strings.Contains(err.Error(), "31337") {
		t.Errorf("the error shows the token: %v", err)
	}
	if h := ch.Health(); h.State != channels.StateFailed {
		t.Errorf("health %s, want failed", h.State)
	}
}

// The reverse endpoint refuses connections without the right token (in the
// header or the query) and clients of another role; before Run it answers
// 503; a stranger's connection never delivers anything.
func TestReverseEndpointChecks(t *testing.T) {
	f, ch, endpoint := setup(t, true, nil, channels.Deps{}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	good := http.Header{"Authorization": {"Bearer " + onebottest.Token}}
	if code := onebottest.TryReverse(ctx, endpoint, good); code != http.StatusServiceUnavailable {
		t.Errorf("before Run: HTTP %d, want 503", code)
	}
	rec := &channeltest.Recorder{}
	runCtx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- ch.Run(runCtx, rec) }()
	t.Cleanup(func() {
		stop()
		if err := <-ran; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	waitfor.Within(t, "the endpoint to take connections", 10*time.Second, func() bool {
		return onebottest.TryReverse(ctx, endpoint, http.Header{}) == http.StatusUnauthorized && ch.incoming()
	})
	for name, tc := range map[string]struct {
		url  string
		h    http.Header
		want int
	}{
		"no token":        {endpoint, http.Header{}, http.StatusUnauthorized},
		"wrong bearer":    {endpoint, http.Header{"Authorization": {"Bearer nope"}}, http.StatusUnauthorized},
		"token prefix":    {endpoint, http.Header{"Authorization": {"Bearer " + onebottest.Token[:5]}}, http.StatusUnauthorized},
		"wrong query":     {endpoint + "?access_token=nope", http.Header{}, http.StatusUnauthorized},
		"API role":        {endpoint, http.Header{"Authorization": {"Bearer " + onebottest.Token}, "X-Client-Role": {"API"}}, http.StatusBadRequest},
		"Token scheme ok": {endpoint, http.Header{"Authorization": {"Token " + onebottest.Token}}, http.StatusSwitchingProtocols},
		"query ok":        {endpoint + "?access_token=" + onebottest.Token, http.Header{}, http.StatusSwitchingProtocols},
	} {
		if code := onebottest.TryReverse(ctx, tc.url, tc.h); code != tc.want {
			t.Errorf("%s: HTTP %d, want %d", name, code, tc.want)
		}
	}
	// A stranger dials with a wrong token and tries to push an event; the
	// genuine implementation connects afterwards.
	stranger := onebottest.New(t, 0)
	stranger.DialReverse(endpoint, "wrong-token", 10*time.Millisecond)
	stranger.Emit(onebottest.Message{From: alice, Text: "forged"})
	f.DialReverse(endpoint, onebottest.Token, 10*time.Millisecond)
	f.Emit(onebottest.Message{From: alice, Text: "genuine"})
	rec.Wait(t, "genuine")
	for _, m := range rec.All() {
		if m.Content == "forged" {
			t.Error("an event from a connection with a wrong token was delivered")
		}
	}
	if stranger.Connects() != 0 {
		t.Errorf("the stranger got %d connections", stranger.Connects())
	}
}

// In groups, the default policy takes only messages that at-mention the bot
// (mention stripped) or reply to one of its messages; CQ-code strings are
// parsed like segment arrays.
func TestGroupMentionPolicy(t *testing.T) {
	f, ch, _ := setup(t, false, nil, channels.Deps{}, nil)
	rec := &channeltest.Recorder{}
	channeltest.Start(t, ch, rec)
	f.Emit(onebottest.Message{From: alice, Group: group, Text: "chatter among people"})
	f.Emit(onebottest.Message{From: alice, Group: group, Text: "hi bot", AtBot: true})
	got := rec.Wait(t, "hi bot")
	if got.Content != "hi bot" || got.ChatID != "group:30001" || !got.IsGroup {
		t.Errorf("got %+v, want the mention stripped in chat group:30001", got)
	}
	ref, err := ch.Send(t.Context(), bus.Outbound{ChatID: got.ChatID, Content: "**hello**", ReplyTo: got.MessageID})
	if err != nil {
		t.Fatal(err)
	}
	f.Emit(onebottest.Message{From: alice, Group: group, Text: "more chatter"})
	f.Emit(onebottest.Message{From: alice, Group: group, Text: "thanks & [ok]", ReplyTo: ref.MessageID, CQ: true})
	rec.Wait(t, "thanks & [ok]")
	for _, m := range rec.All() {
		if strings.Contains(m.Content, "chatter") {
			t.Errorf("a group message not for the bot was delivered: %q", m.Content)
		}
	}
	sent := f.Sent()
	if len(sent) != 1 {
		t.Fatalf("sent %+v", sent)
	}
	want := []onebottest.Segment{
		{Type: "reply", Data: map[string]any{"id": got.MessageID}},
		{Type: "text", Data: map[string]any{"text": "hello"}},
	}
	if d := cmp.Diff(want, sent[0].Segments); d != "" {
		t.Errorf("segments (-want +got):\n%s", d)
	}
}

// An image a user sends is downloaded into the media folder; an image the
// bot sends goes as a base64:// image segment with the file's bytes.
func TestImages(t *testing.T) {
	dir := t.TempDir()
	f, ch, _ := setup(t, false, nil, channels.Deps{Paths: configs.Paths{Media: dir}}, nil)
	rec := &channeltest.Recorder{}
	channeltest.Start(t, ch, rec)
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 100)...)
	f.Emit(onebottest.Message{From: alice, Text: "look", Image: png})
	got := rec.Wait(t, "look")
	if len(got.Media) != 1 {
		t.Fatalf("media %+v, want one image", got.Media)
	}
	if b, err := os.ReadFile(got.Media[0].Path); err != nil || !bytes.Equal(b, png) {
		t.Errorf("saved image differs (%v)", err)
	}
	out := filepath.Join(t.TempDir(), "chart.png")
	if err := os.WriteFile(out, png, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.SendMedia(t.Context(), bus.Outbound{ChatID: got.ChatID, Content: "here", Media: []bus.Media{{Path: out, MIMEType: "image/png"}}}); err != nil {
		t.Fatal(err)
	}
	sent := f.Sent()
	if len(sent) != 1 || len(sent[0].Segments) != 2 || sent[0].Segments[1].Type != "image" {
		t.Fatalf("sent %+v, want text and image", sent)
	}
	file, _ := sent[0].Segments[1].Data["file"].(string)
	b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(file, "base64://"))
	if !strings.HasPrefix(file, "base64://") || err != nil || !bytes.Equal(b, png) {
		t.Errorf("image segment file %.40q does not carry the image", file)
	}
}

// When heartbeats stop, the connection is dropped and dialled again.
func TestMissedHeartbeatsReconnect(t *testing.T) {
	f := onebottest.New(t, 30*time.Millisecond)
	c := DefaultConfig()
	c.Enabled, c.AllowFrom, c.URL, c.AccessToken = true, []string{"*"}, f.URL, onebottest.Token
	ch, err := New(c, channels.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	ch.backoffMin, ch.backoffMax, ch.watchEvery = 20*time.Millisecond, 100*time.Millisecond, 10*time.Millisecond
	rec := &channeltest.Recorder{}
	channeltest.Start(t, ch, rec)
	waitfor.Within(t, "connected", 10*time.Second, func() bool { return ch.Health().State == channels.StateConnected })
	waitfor.Within(t, "heartbeats", 10*time.Second, func() bool { return f.Heartbeats() >= 2 })
	f.SetSilent(true)
	waitfor.Within(t, "a second connection after heartbeats stopped", 10*time.Second, func() bool { return f.Connects() >= 2 })
	f.SetSilent(false)
	f.Emit(onebottest.Message{From: alice, Text: "still here"})
	rec.Wait(t, "still here")
	waitfor.Within(t, "connected again", 10*time.Second, func() bool { return ch.Health().State == channels.StateConnected })
}

func TestParseCQ(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []segment
	}{
		{"plain", []segment{{"text", map[string]string{"text": "plain"}}}},
		{"[CQ:at,qq=10001] hi &#91;x&#93; &amp; y", []segment{{"at", map[string]string{"qq": "10001"}}, {"text", map[string]string{"text": " hi [x] & y"}}}},
		{"[CQ:image,file=a.png,url=http://h/x?a=1&#44;2]", []segment{{"image", map[string]string{"file": "a.png", "url": "http://h/x?a=1,2"}}}},
		{"[CQ:reply,id=7][CQ:face,id=14]ok", []segment{{"reply", map[string]string{"id": "7"}}, {"face", map[string]string{"id": "14"}}, {"text", map[string]string{"text": "ok"}}}},
		{"broken [CQ:at,qq=1", []segment{{"text", map[string]string{"text": "broken [CQ:at,qq=1"}}}},
	} {
		if d := cmp.Diff(tc.want, ParseCQ(tc.in)); d != "" {
			t.Errorf("ParseCQ(%q) (-want +got):\n%s", tc.in, d)
		}
	}
}

func TestValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*Config)
		want string
	}{
		"forward without url":    {func(c *Config) {}, "url: required"},
		"http url":               {func(c *Config) { c.URL = "http://x" }, "must start with ws://"},
		"reverse without token":  {func(c *Config) { c.Mode = ModeReverse }, "accessToken: required"},
		"bad mode":               {func(c *Config) { c.Mode = "sideways" }, "mode:"},
		"bad image mode":         {func(c *Config) { c.URL, c.ImageMode = "ws://x", "gif" }, "imageMode:"},
		"allowlist without list": {func(c *Config) { c.URL, c.GroupPolicy = "ws://x", channels.GroupAllowlist }, "groupAllowFrom"},
	} {
		c := DefaultConfig()
		tc.edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate = %v, want %q", name, err, tc.want)
		}
	}
}
