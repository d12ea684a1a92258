package dingtalk

import (
	"context"
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
	"github.com/nanobot-go/nanobot/channels/dingtalk/dingtalktest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

const groupID = "cidGroupAbc123=="

func newChannel(t *testing.T, f *dingtalktest.Server, log *slog.Logger, deps channels.Deps, edit func(*Config)) *Channel {
	t.Helper()
	c := DefaultConfig()
	c.Enabled, c.AllowFrom = true, []string{"*"}
	c.ClientID, c.ClientSecret, c.APIBase = dingtalktest.ClientID, dingtalktest.ClientSecret, f.URL
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

func noViolations(t *testing.T, f *dingtalktest.Server) {
	t.Cleanup(func() {
		if v := f.Violations(); len(v) > 0 {
			t.Errorf("protocol violations: %q", v)
		}
	})
}

func TestConformance(t *testing.T) {
	channeltest.Run(t, channeltest.Harness{Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
		f := dingtalktest.New(t)
		noViolations(t, f)
		ch := newChannel(t, f, env.Log, channels.Deps{Paths: configs.Paths{Media: env.MediaDir, State: env.StateDir}}, nil)
		var mu sync.Mutex
		frames := map[string]string{} // message id -> frame id
		return channeltest.Fixture{
			Channel:  ch,
			SenderID: func(user string) string { return "staff-" + user },
			Emit: func(m channeltest.Message) channeltest.Emitted {
				msg := dingtalktest.Message{From: "staff-" + m.From, Nick: m.From, Text: m.Text}
				chat := msg.From
				if m.Group {
					msg.Group, msg.AtBot, chat = groupID, true, "group:"+groupID
				}
				id, frame := f.Send(msg)
				mu.Lock()
				frames[id] = frame
				mu.Unlock()
				return channeltest.Emitted{ChatID: chat, MessageID: id}
			},
			EmitMalformed: func() { f.SendRaw(`{"msgId": 7, "text": "not an object"`) },
			Drop:          f.Drop,
			Sent: func() []channeltest.Sent {
				var out []channeltest.Sent
				for _, s := range f.Sent() {
					chat := s.To
					if s.Group {
						chat = "group:" + s.Conversation
					}
					out = append(out, channeltest.Sent{ChatID: chat, MessageID: s.ProcessQueryKey, Text: s.Text, At: s.At})
				}
				return out
			},
			Acked: func(e channeltest.Emitted) bool {
				mu.Lock()
				frame := frames[e.MessageID]
				mu.Unlock()
				code, _, ok := f.Acked(frame)
				return ok && code == 200
			},
		}
	}})
}

// SYSTEM ping is echoed with its data; SYSTEM disconnect is acknowledged
// and answered with a new connection (a fresh ticket), after which
// messages flow again.
func TestPingAndDisconnect(t *testing.T) {
	f := dingtalktest.New(t)
	noViolations(t, f)
	rec := &channeltest.Recorder{}
	channeltest.Start(t, newChannel(t, f, nil, channels.Deps{}, nil), rec)
	ping := f.Ping()
	waitfor.Within(t, "the ping echoed", 5*time.Second, func() bool { _, _, ok := f.Acked(ping); return ok })
	bye := f.Disconnect()
	waitfor.Within(t, "the disconnect acknowledged", 5*time.Second, func() bool { _, _, ok := f.Acked(bye); return ok })
	waitfor.Within(t, "a second connection", 10*time.Second, func() bool { return f.Opens() >= 2 && f.Connected() })
	_, frame := f.Send(dingtalktest.Message{From: "staff-ann", Text: "still there?"})
	rec.Wait(t, "still there?")
	waitfor.Within(t, "the message acknowledged", 5*time.Second, func() bool {
		code, data, ok := f.Acked(frame)
		return ok && code == 200 && data == `{"response":null}`
	})
}

// Groups: only @-mentions under the default policy; groupUserIsolation gives
// each member a session; disablePrivateChat drops one-to-one chats; the
// reply to a group goes to groupMessages/send with a title.
func TestGroupsAndPrivateChats(t *testing.T) {
	f := dingtalktest.New(t)
	noViolations(t, f)
	rec := &channeltest.Recorder{}
	ch := newChannel(t, f, nil, channels.Deps{}, func(c *Config) { c.GroupUserIsolation, c.DisablePrivateChat = true, true })
	channeltest.Start(t, ch, rec)
	_, private := f.Send(dingtalktest.Message{From: "staff-ann", Text: "private hello"})
	_, chatter := f.Send(dingtalktest.Message{From: "staff-ann", Group: groupID, Text: "chatter without mention"})
	_, status := f.Send(dingtalktest.Message{From: "staff-ann", Group: groupID, AtBot: true, Text: "## Status please\nand more"})
	got := rec.Wait(t, "Status please")
	if got.ChatID != "group:"+groupID || !got.IsGroup || got.SessionKey != "dingtalk:group:"+groupID+":staff-ann" {
		t.Errorf("group message %+v", got)
	}
	if _, err := ch.Send(context.Background(), bus.Outbound{ChatID: got.ChatID, Content: "## All green\n\n- build ok"}); err != nil {
		t.Fatal(err)
	}
	// Every frame is acknowledged once the adapter is done with it.
	waitfor.Within(t, "all three frames acknowledged", 5*time.Second, func() bool {
		_, _, a := f.Acked(private)
		_, _, b := f.Acked(chatter)
		_, _, c := f.Acked(status)
		return a && b && c
	})
	for _, m := range rec.All() {
		if strings.Contains(m.Content, "private") || strings.Contains(m.Content, "without mention") {
			t.Errorf("delivered %q", m.Content)
		}
	}
	sent := f.Sent()
	if len(sent) != 1 || !sent[0].Group || sent[0].Conversation != groupID || sent[0].Title != "All green" || !strings.Contains(sent[0].Text, "- build ok") {
		t.Errorf("sent %+v", sent)
	}
}

// Pictures and files are fetched by download code into the media folder,
// only for admitted senders; audio comes with DingTalk's transcript.
func TestMedia(t *testing.T) {
	f := dingtalktest.New(t)
	noViolations(t, f)
	png := []byte("\x89PNG\r\n\x1a\n-picture-")
	f.AddFile("code-pic", png)
	f.AddFile("code-doc", []byte("%PDF-1.4 report"))
	dir := t.TempDir()
	rec := &channeltest.Recorder{Refuse: func(s string) bool { return s == "staff-eve" }}
	channeltest.Start(t, newChannel(t, f, nil, channels.Deps{Paths: configs.Paths{Media: dir}}, nil), rec)
	f.Send(dingtalktest.Message{From: "staff-eve", Type: "picture", Content: map[string]string{"downloadCode": "code-pic"}})
	f.Send(dingtalktest.Message{From: "staff-ann", Type: "picture", Content: map[string]string{"downloadCode": "code-pic"}})
	f.Send(dingtalktest.Message{From: "staff-ann", Type: "file", Content: map[string]string{"downloadCode": "code-doc", "fileName": "report.pdf"}})
	f.Send(dingtalktest.Message{From: "staff-ann", Type: "audio", Content: map[string]string{"downloadCode": "code-x", "recognition": "明天开会吗"}})
	rec.Wait(t, "明天开会吗")
	var pics, docs int
	for _, m := range rec.All() {
		for _, md := range m.Media {
			data, err := os.ReadFile(md.Path)
			if err != nil || filepath.Dir(md.Path) != filepath.Join(dir, "dingtalk") {
				t.Errorf("media %+v: %v", md, err)
			}
			switch {
			case md.MIMEType == "image/png" && string(data) == string(png):
				pics++
			case md.Name == "report.pdf":
				docs++
			}
		}
		if m.SenderID == "staff-eve" && (len(m.Media) > 0 || !strings.Contains(m.Content, "sender not allowed")) {
			t.Errorf("a refused sender's picture: %+v", m)
		}
	}
	if pics != 1 || docs != 1 {
		t.Errorf("%d pictures and %d documents saved, want 1 each: %+v", pics, docs, rec.All())
	}
}

func TestBadCredentialsAreFatal(t *testing.T) {
	f := dingtalktest.New(t)
	var logs strings.Builder
	ch := newChannel(t, f, slog.New(slog.NewTextHandler(&logs, nil)), channels.Deps{}, func(c *Config) { c.ClientSecret = "wrong-secret-value" })
	err := ch.Run(context.Background(), &channeltest.Recorder{})
	if err == nil || !strings.Contains(err.Error(), "clientSecret") || strings.Contains(err.Error(), "wrong-secret-value") {
		t.Fatalf("Run: %v", err)
	}
	if strings.Contains(logs.String(), "wrong-secret-value") || ch.Health().State != channels.StateFailed {
		t.Errorf("health %+v", ch.Health())
	}
}

func TestConfigAndTitle(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.ClientID = "" }, "clientId is required"},
		{func(c *Config) { c.ClientSecret = "" }, "clientSecret is required"},
		{func(c *Config) { c.GroupPolicy = "all" }, "groupPolicy"},
		{func(c *Config) { c.APIBase = "::" }, "apiBase"},
	} {
		c := DefaultConfig()
		c.ClientID, c.ClientSecret = "id", "secret-123456"
		tc.edit(&c)
		if _, err := New(c, channels.Deps{}); err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secret-123456") {
			t.Errorf("want %q: %v", tc.want, err)
		}
	}
	for in, want := range map[string]string{
		"## Hello **there**\nmore": "Hello there",
		"- `go test` passes":       "go test passes",
		"":                         "nanobot",
		"一二三四五六七八九十一二三四五六七八九十一二": "一二三四五六七八九十一二三四五六七八九十…",
	} {
		if got := title(in); got != want {
			t.Errorf("title(%q) = %q, want %q", in, got, want)
		}
	}
}
