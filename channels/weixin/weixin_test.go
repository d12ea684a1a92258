package weixin

import (
	"bytes"
	"context"
	"crypto/aes"
	"encoding/base64"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/weixin/weixintest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

func newChannel(t *testing.T, f *weixintest.Server, log *slog.Logger, deps channels.Deps, edit func(*Config)) *Channel {
	t.Helper()
	c := DefaultConfig()
	c.Enabled, c.AllowFrom = true, []string{"*"}
	c.Token, c.BaseURL, c.CDNBaseURL = weixintest.Token, f.URL, f.URL
	if edit != nil {
		edit(&c)
	}
	deps.Log = log
	ch, err := New(c, deps)
	if err != nil {
		t.Fatal(err)
	}
	ch.backoffMin, ch.backoffMax, ch.qrPoll = 20*time.Millisecond, 200*time.Millisecond, 10*time.Millisecond
	return ch
}

func noViolations(t *testing.T, f *weixintest.Server) {
	t.Cleanup(func() {
		if v := f.Violations(); len(v) > 0 {
			t.Errorf("protocol violations: %q", v)
		}
	})
}

func TestConformance(t *testing.T) {
	channeltest.Run(t, channeltest.Harness{
		Skip: map[string]string{"inbound_group": "the ilink bot API has one-to-one chats only"},
		Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
			f := weixintest.New(t)
			noViolations(t, f)
			ch := newChannel(t, f, env.Log, channels.Deps{Paths: configs.Paths{Media: env.MediaDir, State: env.StateDir}}, nil)
			var mu sync.Mutex
			return channeltest.Fixture{
				Channel:  ch,
				SenderID: func(user string) string { return "wx_" + user + "@im.wechat" },
				Emit: func(m channeltest.Message) channeltest.Emitted {
					mu.Lock()
					defer mu.Unlock()
					user := "wx_" + m.From + "@im.wechat"
					return channeltest.Emitted{ChatID: user, MessageID: f.Emit(user, m.Text)}
				},
				EmitMalformed: f.EmitMalformed,
				Drop:          func() { f.Fail(300 * time.Millisecond) },
				Sent: func() []channeltest.Sent {
					var out []channeltest.Sent
					for _, s := range f.Sent() {
						out = append(out, channeltest.Sent{ChatID: s.To, MessageID: s.ClientID, Text: s.Text, At: s.At})
					}
					return out
				},
				Acked: func(e channeltest.Emitted) bool { return f.Acked(e.MessageID) },
			}
		},
	})
}

// The reply carries the user's latest context token; the cursor and the
// tokens survive a restart (nothing answered twice, replies still
// possible); the bot's own echoes are skipped; Markdown becomes plain text.
func TestContextTokensCursorAndRestart(t *testing.T) {
	f := weixintest.New(t)
	noViolations(t, f)
	state := t.TempDir()
	rec := &channeltest.Recorder{}
	ch := newChannel(t, f, nil, channels.Deps{Paths: configs.Paths{State: state}}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, rec) }()
	f.EmitEcho("an echo of the bot")
	f.Emit("ann", "first")
	id := f.Emit("ann", "second")
	in := rec.Wait(t, "second")
	if _, err := ch.Send(ctx, bus.Outbound{ChatID: in.ChatID, Content: "## Answer\n**bold** and [docs](https://example.test)"}); err != nil {
		t.Fatal(err)
	}
	waitfor.Within(t, "the cursor past the second message", 5*time.Second, func() bool { return f.Acked(id) })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s := f.Sent(); len(s) != 1 || s[0].Text != "Answer\nbold and docs (https://example.test)" || s[0].ContextToken != "ctx-ann-2" {
		t.Errorf("sent %+v", s)
	}
	for _, m := range rec.All() {
		if strings.Contains(m.Content, "echo") {
			t.Error("the bot's own message was delivered")
		}
	}
	info, err := os.Stat(filepath.Join(state, "weixin", "state.json"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v %v", info, err)
	}

	away := f.Emit("bob", "while away")
	rec2 := &channeltest.Recorder{}
	ch2 := newChannel(t, f, nil, channels.Deps{Paths: configs.Paths{State: state}}, nil)
	ctx2 := channeltest.Start(t, ch2, rec2)
	rec2.Wait(t, "while away")
	if _, err := ch2.Send(ctx2, bus.Outbound{ChatID: "ann", Content: "a reply after the restart"}); err != nil {
		t.Fatalf("reply with the saved context token: %v", err)
	}
	// The cursor moved past the new message: everything before it in the
	// update stream (a replay of old messages) would have been delivered.
	waitfor.Within(t, "the cursor past the new message", 5*time.Second, func() bool { return f.Acked(away) })
	if n := len(rec2.All()); n != 1 {
		t.Errorf("%d messages after the restart, want only the new one", n)
	}
	if _, err := ch2.Send(ctx2, bus.Outbound{ChatID: "stranger", Content: "hi"}); err == nil {
		t.Error("a message to a user who never wrote was sent")
	}
}

// Images come from the CDN encrypted and are decrypted into the media
// folder; voice arrives as its transcript.
func TestMedia(t *testing.T) {
	f := weixintest.New(t)
	noViolations(t, f)
	dir := t.TempDir()
	rec := &channeltest.Recorder{}
	channeltest.Start(t, newChannel(t, f, nil, channels.Deps{Paths: configs.Paths{Media: dir}}, nil), rec)
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte("p"), 40)...)
	f.Emit("ann", "", weixintest.Item{"type": 2, "image_item": map[string]any{"media": f.AddFile(png)}})
	f.Emit("ann", "", weixintest.Item{"type": 3, "voice_item": map[string]any{"text": "晚上吃什么"}})
	rec.Wait(t, "晚上吃什么")
	waitfor.Within(t, "the image", 5*time.Second, func() bool {
		for _, m := range rec.All() {
			if len(m.Media) == 1 {
				data, err := os.ReadFile(m.Media[0].Path)
				return err == nil && bytes.Equal(data, png)
			}
		}
		return false
	})
}

// An expired login (errcode -14) stops the channel and says what to do;
// no login at all fails at once.
func TestExpiredAndMissingLogin(t *testing.T) {
	f := weixintest.New(t)
	ch := newChannel(t, f, nil, channels.Deps{}, nil)
	done := make(chan error, 1)
	go func() { done <- ch.Run(context.Background(), &channeltest.Recorder{}) }()
	waitfor.Within(t, "connected", 10*time.Second, func() bool { return ch.Health().State == channels.StateConnected })
	f.Expire()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "channels login weixin") || !channels.IsFatal(err) || ch.Health().State != channels.StateFailed {
			t.Fatalf("Run: %v, health %+v", err, ch.Health())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run went on after -14")
	}
	none := newChannel(t, f, nil, channels.Deps{}, func(c *Config) { c.Token = "" })
	if err := none.Run(context.Background(), &channeltest.Recorder{}); err == nil || !strings.Contains(err.Error(), "not logged in") {
		t.Fatalf("Run without a login: %v", err)
	}
}

type prompts struct {
	mu    sync.Mutex
	shown []string
}

func (p *prompts) Show(s string) { p.mu.Lock(); p.shown = append(p.shown, s); p.mu.Unlock() }

// Login shows a QR code, survives an expired one, and saves the token (0600)
// that the next Run uses.
func TestLogin(t *testing.T) {
	f := weixintest.New(t)
	noViolations(t, f)
	state := t.TempDir()
	f.ScriptLogin("wait", "expired", "wait", "scaned", "scaned")
	ch := newChannel(t, f, nil, channels.Deps{Paths: configs.Paths{State: state}}, func(c *Config) { c.Token = "" })
	var p prompts
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ch.Login(ctx, &p); err != nil {
		t.Fatal(err)
	}
	if f.QRCodes() != 2 {
		t.Errorf("%d QR codes, want a new one after the first expired", f.QRCodes())
	}
	all := strings.Join(p.shown, "\n")
	for _, want := range []string{"Scan with WeChat", "expired", "confirm the login on the phone", "Logged in"} {
		if !strings.Contains(all, want) {
			t.Errorf("prompts lack %q:\n%s", want, all)
		}
	}
	data, err := os.ReadFile(filepath.Join(state, "weixin", "state.json"))
	if err != nil || !strings.Contains(string(data), weixintest.Token) {
		t.Fatalf("saved login: %s %v", data, err)
	}
	rec := &channeltest.Recorder{}
	channeltest.Start(t, newChannel(t, f, nil, channels.Deps{Paths: configs.Paths{State: state}}, func(c *Config) { c.Token = "" }), rec)
	f.Emit("ann", "after login")
	rec.Wait(t, "after login")
}

// TestDecryptVector: the ciphertext is made here with crypto/aes block by
// block (ECB), independently of the code under test, for each key form.
func TestDecryptVector(t *testing.T) {
	key := []byte("0123456789abcdef")
	plain := []byte("微信 attachment of some length")
	pad := aes.BlockSize - len(plain)%aes.BlockSize
	padded := append(append([]byte{}, plain...), bytes.Repeat([]byte{byte(pad)}, pad)...)
	block, _ := aes.NewCipher(key)
	ct := make([]byte, len(padded))
	for i := 0; i < len(padded); i += aes.BlockSize {
		block.Encrypt(ct[i:], padded[i:i+aes.BlockSize])
	}
	for _, form := range []string{
		hex.EncodeToString(key),
		base64.StdEncoding.EncodeToString(key),
		base64.StdEncoding.EncodeToString([]byte(hex.EncodeToString(key))),
	} {
		got, err := decrypt(ct, form)
		if err != nil || !bytes.Equal(got, plain) {
			t.Errorf("key form %q: %q, %v", form, got, err)
		}
	}
	if _, err := decrypt(ct, hex.EncodeToString([]byte("fedcba9876543210"))); err == nil {
		t.Error("a wrong key decrypted")
	}
	if _, err := decrypt(ct[:5], hex.EncodeToString(key)); err == nil {
		t.Error("a truncated file decrypted")
	}
}

func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.BaseURL = "nope" }, "baseUrl"},
		{func(c *Config) { c.CDNBaseURL = "ftp://x" }, "cdnBaseUrl"},
		{func(c *Config) { c.PollTimeout = 500 }, "pollTimeout"},
	} {
		c := DefaultConfig()
		tc.edit(&c)
		if _, err := New(c, channels.Deps{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want %q: %v", tc.want, err)
		}
	}
}
