package signal

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/signal/signaltest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

const group = "Pmpi+EfPWmsxiomLe9Nx2XF9HOE483p6iKiFj65iMwI="

var (
	alice   = signaltest.User{Number: "+15550002222", UUID: "aaaaaaaa-1111-4222-8333-444455556666", Name: "Alice"}
	mallory = signaltest.User{Number: "+15550003333", UUID: "bbbbbbbb-1111-4222-8333-444455556666", Name: "Mallory"}
	bot     = signaltest.User{Number: signaltest.Account, UUID: signaltest.AccountUUID, Name: "nanobot"}
)

func newChannel(t *testing.T, f *signaltest.Server, log *slog.Logger, deps channels.Deps, edit func(*Config)) *Channel {
	t.Helper()
	c := DefaultConfig()
	c.Enabled, c.AllowFrom = true, []string{"*"}
	c.Account, c.HTTPURL = signaltest.Account, f.URL
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

func noViolations(t *testing.T, f *signaltest.Server) {
	t.Cleanup(func() {
		if v := f.Violations(); len(v) > 0 {
			t.Errorf("protocol violations: %q", v)
		}
	})
}

func harness(tcp bool) channeltest.Harness {
	users := map[string]signaltest.User{channeltest.Alice: alice, channeltest.Mallory: mallory}
	return channeltest.Harness{Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
		f := signaltest.New(t)
		f.AddGroup(group, "Team")
		noViolations(t, f)
		ch := newChannel(t, f, env.Log, channels.Deps{Paths: configs.Paths{Media: env.MediaDir}}, func(c *Config) {
			if tcp {
				c.TCPAddr = f.TCPAddr
			}
		})
		return channeltest.Fixture{
			Channel:  ch,
			SenderID: func(user string) string { u := users[user]; return u.Number + "|" + u.UUID },
			Emit: func(m channeltest.Message) channeltest.Emitted {
				u := users[m.From]
				msg := signaltest.Message{From: u, Text: m.Text}
				chat := u.Number
				if m.Group {
					msg.Group, msg.Text = group, "\uFFFC "+m.Text
					msg.Mentions = []signaltest.Mention{{User: bot, Start: 0}}
					chat = groupPrefix + group
				}
				if tcp {
					// signal-cli sends notifications only to connected
					// sockets.
					waitfor.Within(t, "a socket", 10*time.Second, func() bool { return f.Sockets() > 0 })
				}
				ts := f.Emit(msg)
				return channeltest.Emitted{ChatID: chat, MessageID: strconv.FormatInt(ts, 10)}
			},
			EmitMalformed: func() { f.EmitRaw(`{"envelope":{"source":42,"dataMessage":"nope"}}`) },
			Drop:          f.Drop,
			Sent: func() []channeltest.Sent {
				var out []channeltest.Sent
				for _, s := range f.Sent() {
					chat := s.Recipient
					if s.GroupID != "" {
						chat = groupPrefix + s.GroupID
					}
					out = append(out, channeltest.Sent{ChatID: chat, MessageID: strconv.FormatInt(s.Timestamp, 10), Text: s.Text, At: s.At})
				}
				return out
			},
		}
	}}
}

func TestConformanceHTTP(t *testing.T) { channeltest.Run(t, harness(false)) }

func TestConformanceTCP(t *testing.T) { channeltest.Run(t, harness(true)) }

// In groups the default policy takes only messages that mention the bot
// or quote it; the bot's mention is removed and others are written as
// @name. Typing notifications and other envelopes without a data message
// are skipped.
func TestGroupMentions(t *testing.T) {
	f := signaltest.New(t)
	f.AddGroup(group, "Team")
	noViolations(t, f)
	rec := &channeltest.Recorder{}
	ch := newChannel(t, f, nil, channels.Deps{}, nil)
	channeltest.Start(t, ch, rec)

	f.EmitTyping(alice)
	f.Emit(signaltest.Message{From: alice, Group: group, Text: "just chatting among ourselves"})
	f.Emit(signaltest.Message{From: alice, Group: group, Text: "\uFFFC ask \uFFFC about it",
		Mentions: []signaltest.Mention{{User: bot, Start: 0}, {User: mallory, Start: 6}}})
	f.Emit(signaltest.Message{From: alice, Group: group, Text: "and what about this?", QuoteBot: true})
	f.Emit(signaltest.Message{From: alice, Text: "a direct one"})
	rec.Wait(t, "a direct one")
	var got []string
	for _, m := range rec.All() {
		got = append(got, m.Content)
	}
	want := []string{"ask @Mallory about it", "and what about this?", "a direct one"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("delivered %q, want %q", got, want)
	}
	first := rec.All()[0]
	if !first.IsGroup || first.ChatID != groupPrefix+group || first.Metadata["group_id"] != group {
		t.Errorf("group message %+v", first)
	}
}

// A reply in a group quotes the message it answers; typing reaches the
// group; files go out as data URIs and come back byte for byte.
func TestOutbound(t *testing.T) {
	f := signaltest.New(t)
	f.AddGroup(group, "Team")
	noViolations(t, f)
	rec := &channeltest.Recorder{}
	ch := newChannel(t, f, nil, channels.Deps{}, nil)
	ctx := channeltest.Start(t, ch, rec)
	ts := f.Emit(signaltest.Message{From: alice, Group: group, Text: "\uFFFC hi", Mentions: []signaltest.Mention{{User: bot}}})
	in := rec.Wait(t, "hi")
	if err := ch.Typing(ctx, in.ChatID, in.Metadata); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.Send(ctx, bus.Outbound{ChatID: in.ChatID, Content: "**hello** [docs](https://example.org)", ReplyTo: in.MessageID, Metadata: in.Metadata}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "report.pdf")
	data := []byte("%PDF-1.4 not really")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.SendMedia(ctx, bus.Outbound{ChatID: alice.Number, Content: "the report", Media: []bus.Media{{Path: file, MIMEType: "application/pdf"}}}); err != nil {
		t.Fatal(err)
	}
	sent := f.Sent()
	if len(sent) != 2 {
		t.Fatalf("sent %+v", sent)
	}
	if s := sent[0]; s.GroupID != group || s.Text != "hello docs (https://example.org)" || s.QuoteTimestamp != ts {
		t.Errorf("group reply %+v, want plain text quoting %d", s, ts)
	}
	if s := sent[1]; s.Recipient != alice.Number || s.Text != "the report" || len(s.Attachments) != 1 ||
		!bytes.Equal(s.Attachments[0].Data, data) || s.Attachments[0].Name != "report.pdf" || s.Attachments[0].ContentType != "application/pdf" {
		t.Errorf("media %+v", s)
	}
	if ty := f.Typing(); len(ty) != 1 || ty[0] != "group:"+group {
		t.Errorf("typing %q", ty)
	}
	_, err := ch.Send(ctx, bus.Outbound{ChatID: "group:unknown", Content: "x"})
	var perm *channels.PermanentError
	if !errors.As(err, &perm) {
		t.Errorf("send to an unknown group: %v, want a PermanentError", err)
	}
}

// Attachments are fetched with getAttachment into the media folder; a
// sender the gate would refuse gets nothing fetched.
func TestAttachmentsIn(t *testing.T) {
	f := signaltest.New(t)
	noViolations(t, f)
	dir := t.TempDir()
	rec := &channeltest.Recorder{Refuse: func(id string) bool { return strings.HasPrefix(id, mallory.Number) }}
	channeltest.Start(t, newChannel(t, f, nil, channels.Deps{Paths: configs.Paths{Media: dir}}, nil), rec)
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1}, 100)...)
	f.Emit(signaltest.Message{From: mallory, Text: "from mallory", Attachments: []signaltest.File{{Name: "x.png", ContentType: "image/png", Data: png}}})
	f.Emit(signaltest.Message{From: alice, Text: "look", Attachments: []signaltest.File{{Name: "cat.png", ContentType: "image/png", Data: png}}})
	in := rec.Wait(t, "look")
	if len(in.Media) != 1 || !in.Media[0].IsImage() {
		t.Fatalf("media %+v", in.Media)
	}
	got, err := os.ReadFile(in.Media[0].Path)
	if err != nil || !bytes.Equal(got, png) {
		t.Fatalf("saved file: %v", err)
	}
	m := rec.Wait(t, "from mallory")
	if len(m.Media) != 0 || !strings.Contains(m.Content, "not downloaded") {
		t.Errorf("a refused sender's file was handled: %+v", m)
	}
	files, _ := os.ReadDir(dir)
	if len(files) != 1 {
		t.Errorf("%d files in the media folder, want only alice's", len(files))
	}
}

// After the event stream broke, the channel reconnects with Last-Event-ID
// and gets what arrived while it was away.
func TestResumeAfterDrop(t *testing.T) {
	f := signaltest.New(t)
	noViolations(t, f)
	rec := &channeltest.Recorder{}
	ch := newChannel(t, f, nil, channels.Deps{}, nil)
	ch.backoffMin, ch.backoffMax = 300*time.Millisecond, 400*time.Millisecond
	channeltest.Start(t, ch, rec)
	f.Emit(signaltest.Message{From: alice, Text: "one"})
	rec.Wait(t, "one")
	f.RefuseStreams(true)
	f.Drop()
	f.Emit(signaltest.Message{From: alice, Text: "two, while away"})
	waitfor.Within(t, "a refused reconnect", 10*time.Second, func() bool { n, _ := f.Streams(); return n >= 2 })
	f.RefuseStreams(false)
	rec.Wait(t, "two, while away")
	n, last := f.Streams()
	if last[n-1] != "1" {
		t.Errorf("Last-Event-IDs %q, want the final reconnect to resume after event 1", last)
	}
	if got := len(rec.All()); got != 2 {
		t.Errorf("%d deliveries, want 2", got)
	}
}

// A stream that stays silent (no keep-alive) counts as dead.
func TestSilentStreamReconnects(t *testing.T) {
	f := signaltest.New(t)
	f.KeepAlive = time.Hour
	rec := &channeltest.Recorder{}
	ch := newChannel(t, f, nil, channels.Deps{}, nil)
	ch.idle = 150 * time.Millisecond
	channeltest.Start(t, ch, rec)
	waitfor.Within(t, "a reconnect", 10*time.Second, func() bool { n, _ := f.Streams(); return n >= 2 })
	f.Emit(signaltest.Message{From: alice, Text: "still there"})
	rec.Wait(t, "still there")
}

// An account signal-cli does not have stops the channel with a reason.
func TestUnknownAccountIsFatal(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		f := signaltest.New(t)
		ch := newChannel(t, f, nil, channels.Deps{}, func(c *Config) {
			c.Account = "+15559999999"
			if tcp {
				c.TCPAddr = f.TCPAddr
			}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := ch.Run(ctx, &channeltest.Recorder{})
		cancel()
		if !channels.IsFatal(err) || !strings.Contains(err.Error(), "+15559999999") {
			t.Errorf("tcp=%v: Run = %v, want a fatal error naming the account", tcp, err)
		}
		if h := ch.Health(); h.State != channels.StateFailed {
			t.Errorf("tcp=%v: health %+v", tcp, h)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Account = "" }, "account is required"},
		{func(c *Config) { c.Account = "015112345" }, "international format"},
		{func(c *Config) { c.HTTPURL = "localhost:8080" }, "httpUrl"},
		{func(c *Config) { c.TCPAddr = "nohost" }, "tcpAddr"},
		{func(c *Config) { c.GroupPolicy = channels.GroupAllowlist }, "groupAllowFrom"},
	} {
		c := DefaultConfig()
		c.Account = "+4915112345678"
		tc.edit(&c)
		if _, err := New(c, channels.Deps{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want an error containing %q", err, tc.want)
		}
	}
}

func TestFormat(t *testing.T) {
	for in, want := range map[string]string{
		"**bold** and _it_":           "bold and it",
		"# Title\n\ntext":             "Title\n\ntext",
		"see [here](https://x.org)":   "see here (https://x.org)",
		"```go\nfmt.Println()\n```":   "```go\nfmt.Println()\n```",
		"- one\n- two":                "- one\n- two",
		"~~gone~~ `code` stays coded": "gone `code` stays coded",
	} {
		if got := Format(in); got != want {
			t.Errorf("Format(%q) = %q, want %q", in, got, want)
		}
	}
}

// The event cursor survives a restart: what arrived while the gateway was
// down is delivered, what it handled before is not delivered again.
func TestCursorAcrossRestarts(t *testing.T) {
	f := signaltest.New(t)
	noViolations(t, f)
	deps := channels.Deps{Paths: configs.Paths{State: t.TempDir()}}
	first := &channeltest.Recorder{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ch := newChannel(t, f, nil, deps, nil)
	go func() { done <- ch.Run(ctx, first) }()
	f.Emit(signaltest.Message{From: alice, Text: "before the restart"})
	first.Wait(t, "before the restart")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	f.Emit(signaltest.Message{From: alice, Text: "while down"})
	second := &channeltest.Recorder{}
	channeltest.Start(t, newChannel(t, f, nil, deps, nil), second)
	second.Wait(t, "while down")
	f.Emit(signaltest.Message{From: alice, Text: "after"})
	second.Wait(t, "after")
	for _, m := range second.All() {
		if m.Content == "before the restart" {
			t.Error("a message handled before the restart was delivered again")
		}
	}
}
