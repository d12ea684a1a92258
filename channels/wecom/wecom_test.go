package wecom

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/wecom/wecomtest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/relay"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

func newChannel(t *testing.T, f *wecomtest.Server, log *slog.Logger, deps channels.Deps, edit func(*Config)) *Channel {
	t.Helper()
	c := DefaultConfig()
	c.Enabled, c.AllowFrom = true, []string{"*"}
	c.BotID, c.Secret, c.WSURL = wecomtest.BotID, wecomtest.Secret, f.URL
	if edit != nil {
		edit(&c)
	}
	deps.Log = log
	ch, err := New(c, deps)
	if err != nil {
		t.Fatal(err)
	}
	ch.backoffMin, ch.backoffMax = 20*time.Millisecond, 200*time.Millisecond
	return ch
}

func noViolations(t *testing.T, f *wecomtest.Server) {
	t.Cleanup(func() {
		if v := f.Violations(); len(v) > 0 {
			t.Errorf("protocol violations: %q", v)
		}
	})
}

func TestConformance(t *testing.T) {
	channeltest.Run(t, channeltest.Harness{Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
		f := wecomtest.New(t)
		noViolations(t, f)
		ch := newChannel(t, f, env.Log, channels.Deps{Paths: configs.Paths{Media: env.MediaDir}}, nil)
		return channeltest.Fixture{
			Channel:  ch,
			SenderID: func(user string) string { return "wx-" + user },
			Emit: func(m channeltest.Message) channeltest.Emitted {
				msg := wecomtest.Message{From: "wx-" + m.From, Text: m.Text}
				if m.Group {
					msg.Group, msg.Text = "wrkGroup01", "@nanobot "+m.Text
				}
				id, chat := f.Emit(msg)
				return channeltest.Emitted{ChatID: chat, MessageID: id}
			},
			EmitMalformed: f.EmitMalformed,
			Drop:          f.Drop,
			Sent: func() []channeltest.Sent {
				var out []channeltest.Sent
				for _, s := range f.Sent() {
					id := s.StreamID
					if id == "" {
						id = s.ReqID
					}
					out = append(out, channeltest.Sent{ChatID: s.ChatID, MessageID: id, Edit: s.Edit, Text: s.Content, At: s.At})
				}
				return out
			},
		}
	}})
}

// A reply streams on the message's req_id: one stream, each frame sent only
// after WeCom answered the previous one, content replaced, finished by
// Finish even when the last text needed no edit; a second reply to the same
// message is pushed as Markdown.
func TestStreamingReply(t *testing.T) {
	f := wecomtest.New(t)
	f.AnswerDelay = 80 * time.Millisecond
	noViolations(t, f)
	rec := &channeltest.Recorder{}
	ch := newChannel(t, f, nil, channels.Deps{}, nil)
	ctx := channeltest.Start(t, ch, rec)
	f.Emit(wecomtest.Message{From: "zhangsan", Text: "写一首诗"})
	in := rec.Wait(t, "写一首诗")
	ref, err := ch.Send(ctx, bus.Outbound{ChatID: in.ChatID, Content: "床前", StreamID: "s1", Metadata: in.Metadata})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	for _, text := range []string{"床前明月光", "床前明月光，疑是地上霜"} {
		go func() { errs <- ch.Edit(ctx, ref, bus.Outbound{Kind: bus.KindDelta, Content: text}) }()
		time.Sleep(10 * time.Millisecond)
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if err := ch.Finish(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if err := ch.Finish(ctx, ref); err != nil {
		t.Fatalf("second Finish: %v", err)
	}
	if _, err := ch.Send(ctx, bus.Outbound{ChatID: in.ChatID, Content: "第二部分", Metadata: in.Metadata}); err != nil {
		t.Fatal(err)
	}
	sent := f.Sent()
	if len(sent) != 5 {
		t.Fatalf("%d frames, want 4 stream frames and a push: %+v", len(sent), sent)
	}
	last := sent[3]
	if !last.Finish || last.Content != "床前明月光，疑是地上霜" || last.StreamID != ref.MessageID {
		t.Errorf("finishing frame %+v", last)
	}
	if p := sent[4]; p.StreamID != "" || p.ChatID != "zhangsan" || p.Content != "第二部分" {
		t.Errorf("second reply %+v, want a push", p)
	}
	if err := ch.Edit(ctx, ref, bus.Outbound{Content: "late"}); err == nil {
		t.Error("an edit after the end succeeded")
	}
}

// A stream whose end never comes (the turn's cluster worker died) is ended
// by the Dispatcher once it has been quiet for StreamQuiet: WeCom gets the
// finishing frame with the text so far, instead of a reply left open.
func TestQuietStreamFinished(t *testing.T) {
	f := wecomtest.New(t)
	noViolations(t, f)
	rec := &channeltest.Recorder{}
	ch := newChannel(t, f, nil, channels.Deps{}, nil)
	ctx := channeltest.Start(t, ch, rec)
	f.Emit(wecomtest.Message{From: "zhangsan", Text: "写一首诗"})
	in := rec.Wait(t, "写一首诗")
	d := relay.NewDispatcher(relay.DispatcherConfig{StreamQuiet: time.Second, WorkerIdle: 50 * time.Millisecond}, []channels.Channel{ch})
	out := make(chan bus.Outbound, 1)
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(ctx, out) }()
	t.Cleanup(func() { close(out); <-done })
	out <- bus.Outbound{Channel: "wecom", ChatID: in.ChatID, Kind: bus.KindDelta, Content: "床前明月光", StreamID: "s1", Metadata: in.Metadata}
	waitfor.Within(t, "the finishing frame", 10*time.Second, func() bool {
		for _, s := range f.Sent() {
			if s.Finish {
				return true
			}
		}
		return false
	})
	sent := f.Sent()
	if last := sent[len(sent)-1]; !last.Finish || last.Content != "床前明月光" || last.StreamID != sent[0].StreamID {
		t.Errorf("frames %+v, want the stream finished with the text so far", sent)
	}
}

// Images arrive encrypted and are decrypted into the media folder; voice
// arrives transcribed; a group message loses its leading @mention; the
// welcome message answers enter_chat.
func TestMediaGroupsAndWelcome(t *testing.T) {
	f := wecomtest.New(t)
	noViolations(t, f)
	dir := t.TempDir()
	rec := &channeltest.Recorder{}
	channeltest.Start(t, newChannel(t, f, nil, channels.Deps{Paths: configs.Paths{Media: dir}}, func(c *Config) { c.WelcomeMessage = "你好，我是助手" }), rec)
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte("x"), 100)...)
	url, key := f.AddFile(png)
	f.Emit(wecomtest.Message{From: "lisi", Type: "image", Payload: map[string]any{"url": url, "aeskey": key}})
	f.Emit(wecomtest.Message{From: "lisi", Type: "voice", Payload: map[string]any{"content": "明天几点开会"}})
	f.Emit(wecomtest.Message{From: "lisi", Group: "grp7", Text: "@nanobot 总结一下"})
	f.EnterChat("wangwu")
	rec.Wait(t, "明天几点开会")
	g := rec.Wait(t, "总结一下")
	if g.Content != "总结一下" || !g.IsGroup || g.ChatID != "grp7" {
		t.Errorf("group message %+v", g)
	}
	waitfor.Within(t, "an image", 5*time.Second, func() bool {
		for _, m := range rec.All() {
			if len(m.Media) == 1 {
				data, err := os.ReadFile(m.Media[0].Path)
				return err == nil && bytes.Equal(data, png) && m.Media[0].MIMEType == "image/png"
			}
		}
		return false
	})
	waitfor.Within(t, "the welcome", 5*time.Second, func() bool {
		for _, s := range f.Sent() {
			if s.Welcome && s.Content == "你好，我是助手" {
				return true
			}
		}
		return false
	})
}

// A silent server (pings unanswered) is detected and the channel
// reconnects; disconnected_event stops it without reconnecting.
func TestHeartbeatAndTakeOver(t *testing.T) {
	f := wecomtest.New(t)
	noViolations(t, f)
	ch := newChannel(t, f, nil, channels.Deps{}, nil)
	ch.heartbeat = 50 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, &channeltest.Recorder{}) }()
	waitfor.Within(t, "pings", 5*time.Second, func() bool { return f.Pings() >= 3 })
	if f.Connections() != 1 {
		t.Fatalf("%d connections while pings were answered", f.Connections())
	}
	f.TakeOver()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "took over") || !channels.IsFatal(err) || ch.Health().State != channels.StateFailed {
			t.Fatalf("Run after disconnected_event: %v, health %+v", err, ch.Health())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run kept going after disconnected_event")
	}
}

func TestBadSecretIsFatal(t *testing.T) {
	f := wecomtest.New(t)
	var logs strings.Builder
	ch := newChannel(t, f, slog.New(slog.NewTextHandler(&logs, nil)), channels.Deps{}, func(c *Config) { c.Secret = "not-the-secret-value" })
	err := ch.Run(context.Background(), &channeltest.Recorder{})
	if err == nil || !strings.Contains(err.Error(), "rejected") || !channels.IsFatal(err) || strings.Contains(err.Error()+logs.String(), "not-the-secret-value") {
		t.Fatalf("Run: %v", err)
	}
}

// TestDecryptVector: the expected plaintext is encrypted here with
// crypto/aes directly (not by the code under test): key from base64, IV
// the key's first 16 bytes, PKCS#7 padding to 32.
func TestDecryptVector(t *testing.T) {
	key := []byte("0123456789abcdef0123456789ABCDEF")
	aesKey := base64.RawStdEncoding.EncodeToString(key) // WeCom's 43-character form
	plain := []byte("企业微信 attachment, 37 bytes!")
	pad := 32 - len(plain)%32
	padded := append(append([]byte{}, plain...), bytes.Repeat([]byte{byte(pad)}, pad)...)
	block, _ := aes.NewCipher(key)
	ct := make([]byte, len(padded))
	cipher.NewCBCEncrypter(block, key[:16]).CryptBlocks(ct, padded)
	got, err := decrypt(ct, aesKey)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("decrypt = %q, %v", got, err)
	}
	if _, err := decrypt(ct, base64.StdEncoding.EncodeToString([]byte("wrong key wrong key wrong key 32"))); err == nil {
		t.Error("a wrong key decrypted without error")
	}
	if _, err := decrypt(ct[:20], aesKey); err == nil {
		t.Error("a truncated file decrypted")
	}
	if _, err := decrypt(ct, "short"); err == nil {
		t.Error("a short key was accepted")
	}
}

func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.BotID = "" }, "botId is required"},
		{func(c *Config) { c.Secret = "" }, "secret is required"},
		{func(c *Config) { c.WSURL = "https://x" }, "wsUrl"},
	} {
		c := DefaultConfig()
		c.BotID, c.Secret = "b", "s3cret-123456"
		tc.edit(&c)
		if _, err := New(c, channels.Deps{}); err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cret-123456") {
			t.Errorf("want %q: %v", tc.want, err)
		}
	}
}
