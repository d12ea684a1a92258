package mochat

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/mochat/mochattest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

const lobby = "lobby"

func userSession(user string) string { return "session_" + user }

func newFake(t *testing.T) *mochattest.Server {
	return mochattest.New(t, []string{userSession(channeltest.Alice), userSession(channeltest.Mallory)}, map[string]string{lobby: "group_1"})
}

func testConfig(f *mochattest.Server) Config {
	c := DefaultConfig()
	c.Enabled, c.AllowFrom = true, []string{"*"}
	c.BaseURL, c.ClawToken, c.AgentUserID = f.URL, mochattest.Token, mochattest.BotID
	c.Sessions, c.Panels = []string{"*"}, []string{lobby}
	c.WatchTimeoutMs, c.PollIntervalMs, c.RefreshIntervalMs = 1000, 40, 200
	return c
}

func newChannel(t *testing.T, f *mochattest.Server, log *slog.Logger, state string, edit func(*Config)) *Channel {
	t.Helper()
	c := testConfig(f)
	if edit != nil {
		edit(&c)
	}
	ch, err := New(c, channels.Deps{Log: log, Paths: configs.Paths{State: state}})
	if err != nil {
		t.Fatal(err)
	}
	ch.backoffMin, ch.backoffMax = 20*time.Millisecond, 200*time.Millisecond
	return ch
}

func noBadCalls(t *testing.T, f *mochattest.Server) {
	t.Cleanup(func() {
		if bad := f.BadCalls(); len(bad) > 0 {
			t.Errorf("the adapter broke the protocol: %q", bad)
		}
	})
}

func TestConformance(t *testing.T) {
	channeltest.Run(t, channeltest.Harness{Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
		f := newFake(t)
		noBadCalls(t, f)
		ch := newChannel(t, f, env.Log, env.StateDir, nil)
		return channeltest.Fixture{
			Channel:  ch,
			SenderID: func(user string) string { return user },
			Emit: func(m channeltest.Message) channeltest.Emitted {
				if m.Group {
					id := f.Post(lobby, mochattest.Message{From: m.From, Text: m.Text, Mentions: []string{mochattest.BotID}})
					return channeltest.Emitted{ChatID: panelPrefix + lobby, MessageID: id}
				}
				id := f.Say(userSession(m.From), mochattest.Message{From: m.From, Text: m.Text})
				return channeltest.Emitted{ChatID: userSession(m.From), MessageID: id}
			},
			EmitMalformed: func() {
				f.Say(userSession(channeltest.Alice), mochattest.Message{Payload: json.RawMessage(`"not a message"`)})
			},
			Drop: func() { f.Fail(500 * time.Millisecond) },
			Sent: func() []channeltest.Sent {
				var out []channeltest.Sent
				for _, s := range f.Sent() {
					chat := s.Session
					if s.Panel != "" {
						chat = panelPrefix + s.Panel
					}
					out = append(out, channeltest.Sent{ChatID: chat, MessageID: s.MessageID, Text: s.Content, At: s.At})
				}
				return out
			},
			Acked: func(e channeltest.Emitted) bool {
				if strings.HasPrefix(e.ChatID, panelPrefix) {
					return true // panels are polled: nothing to acknowledge
				}
				return f.Watched(e.ChatID, e.MessageID)
			},
		}
	}})
}

// History before the first start is not answered; the bot's own messages
// and panel messages that do not mention it are skipped; a reply goes to the
// panel with its group; after a restart the saved cursor resumes without
// answering anything twice.
func TestHistoryOwnMessagesMentionsAndResume(t *testing.T) {
	f := newFake(t)
	noBadCalls(t, f)
	alice := userSession("alice")
	old := time.Now().Add(-time.Hour)
	for range 3 { // more history than one watch returns
		f.Say(alice, mochattest.Message{From: "alice", Text: "old question", At: old})
	}
	f.Post(lobby, mochattest.Message{From: "alice", Text: "old panel chatter", Mentions: []string{mochattest.BotID}, At: old})
	state := t.TempDir()
	rec := &channeltest.Recorder{}
	ch := newChannel(t, f, nil, state, func(c *Config) { c.WatchLimit = 2 })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, rec) }()
	waitfor.Within(t, "connected", 10*time.Second, func() bool { return ch.Health().State == channels.StateConnected })

	f.Say(alice, mochattest.Message{From: mochattest.BotID, Text: "my own echo"})
	f.Post(lobby, mochattest.Message{From: "bob", Text: "not for the bot"})
	f.Post(lobby, mochattest.Message{From: "bob", Text: "hey bot", Mentions: []string{mochattest.BotID}})
	first := f.Say(alice, mochattest.Message{From: "alice", Text: "new question"})
	got := rec.Wait(t, "new question")
	panel := rec.Wait(t, "hey bot")
	if panel.ChatID != "panel:lobby" || !panel.IsGroup || panel.Metadata["group_id"] != "group_1" || panel.SenderID != "bob" {
		t.Errorf("panel message %+v", panel)
	}
	if _, err := ch.Send(ctx, bus.Outbound{ChatID: panel.ChatID, Content: "hi bob", ReplyTo: panel.MessageID, Metadata: panel.Metadata}); err != nil {
		t.Fatal(err)
	}
	waitfor.Within(t, "the cursor past the new question", 5*time.Second, func() bool { return f.Watched(alice, first) })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, m := range rec.All() {
		if strings.Contains(m.Content, "old") || strings.Contains(m.Content, "echo") || strings.Contains(m.Content, "not for the bot") {
			t.Errorf("delivered %q", m.Content)
		}
	}
	if got.ChatID != alice || got.IsGroup || got.Metadata["sender_name"] != "nick alice" {
		t.Errorf("session message %+v", got)
	}
	sent := f.Sent()
	if len(sent) != 1 || sent[0].Panel != lobby || sent[0].GroupID != "group_1" || sent[0].ReplyTo != panel.MessageID {
		t.Errorf("sent %+v", sent)
	}
	info, err := os.Stat(filepath.Join(state, "mochat-cursors.json"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("cursor file: %v %v", info, err)
	}

	// A restart resumes from the saved cursor: only the message written
	// while the bot was down is answered.
	f.Say(alice, mochattest.Message{From: "alice", Text: "while you were away"})
	rec2 := &channeltest.Recorder{}
	ch2 := newChannel(t, f, nil, state, nil)
	channeltest.Start(t, ch2, rec2)
	rec2.Wait(t, "while you were away")
	// A message written after it is delivered after it, so by then a
	// replay of anything older would have been too.
	f.Say(alice, mochattest.Message{From: "alice", Text: "and one more"})
	rec2.Wait(t, "and one more")
	if n := len(rec2.All()); n != 2 {
		t.Errorf("%d messages after the restart, want only the two new ones: %+v", n, rec2.All())
	}
}

// A session created later is found by "*" and answered.
func TestDiscoversNewSessions(t *testing.T) {
	f := newFake(t)
	noBadCalls(t, f)
	rec := &channeltest.Recorder{}
	channeltest.Start(t, newChannel(t, f, nil, t.TempDir(), nil), rec)
	f.AddSession("session_carol")
	// The new session's history (none here) is skipped; wait until it is
	// watched before writing.
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.Say("session_carol", mochattest.Message{From: "carol", Text: "ping"})
		if find(rec, "ping") != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if m := find(rec, "ping"); m == nil || m.ChatID != "session_carol" {
		t.Fatalf("message in a discovered session: %+v", m)
	}
}

func TestBadTokenIsFatal(t *testing.T) {
	f := newFake(t)
	var logs strings.Builder
	ch := newChannel(t, f, slog.New(slog.NewTextHandler(&logs, nil)), "", func(c *Config) { c.ClawToken = "wrong-token-value" })
	err := ch.Run(context.Background(), &channeltest.Recorder{})
	if err == nil || !strings.Contains(err.Error(), "clawToken") || strings.Contains(err.Error(), "wrong-token-value") {
		t.Fatalf("Run: %v", err)
	}
	if strings.Contains(logs.String(), "wrong-token-value") || ch.Health().State != channels.StateFailed {
		t.Errorf("health %+v; token in logs: %v", ch.Health(), strings.Contains(logs.String(), "wrong-token-value"))
	}
}

func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no token", func(c *Config) { c.ClawToken = "" }, "clawToken is required"},
		{"bad url", func(c *Config) { c.BaseURL = "ftp://x" }, "baseUrl"},
		{"nothing to watch", func(c *Config) { c.Sessions, c.Panels = nil, nil }, "sessions or panels"},
		{"mention without id", func(c *Config) { c.AgentUserID = "" }, "agentUserId is required"},
		{"policy", func(c *Config) { c.GroupPolicy = "loud" }, "groupPolicy"},
		{"timeout", func(c *Config) { c.WatchTimeoutMs = -1 }, "watchTimeoutMs"},
	} {
		c := DefaultConfig()
		c.ClawToken, c.AgentUserID, c.Sessions, c.Panels = "tok-123456", "u", []string{"*"}, []string{"p"}
		tc.edit(&c)
		_, err := New(c, channels.Deps{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "tok-123456") {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestSendErrors(t *testing.T) {
	f := newFake(t)
	ch := newChannel(t, f, nil, "", nil)
	var pe *channels.PermanentError
	if _, err := ch.Send(context.Background(), bus.Outbound{ChatID: "session_alice", Content: "  "}); !errors.As(err, &pe) {
		t.Errorf("empty text: %v", err)
	}
	if _, err := ch.Send(context.Background(), bus.Outbound{ChatID: "panel:", Content: "x"}); !errors.As(err, &pe) {
		t.Errorf("empty panel: %v", err)
	}
	if _, err := ch.Send(context.Background(), bus.Outbound{ChatID: "session_nobody", Content: "x"}); err == nil {
		t.Error("send to an unknown session succeeded")
	}
}

func find(r *channeltest.Recorder, text string) *bus.Inbound {
	for _, m := range r.All() {
		if strings.Contains(m.Content, text) {
			return &m
		}
	}
	return nil
}
