package feishu

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/feishu/feishutest"
	"github.com/nanobot-go/nanobot/configs"
)

const (
	aliceID   = "ou_alice"
	malloryID = "ou_mallory"
	groupID   = "oc_group"
)

// newChannel builds a channel against fake with short backoffs.
func newChannel(t *testing.T, fake *feishutest.Server, log *slog.Logger, mediaDir string, edit func(*Config)) *Channel {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Enabled, cfg.AllowFrom = true, []string{"*"}
	cfg.AppID, cfg.AppSecret, cfg.APIBase = feishutest.AppID, feishutest.AppSecret, fake.URL
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

// noViolations fails the test if the fake saw the adapter break the
// protocol.
func noViolations(t *testing.T, fake *feishutest.Server) {
	t.Helper()
	t.Cleanup(func() {
		for _, v := range fake.Violations() {
			t.Errorf("protocol violation: %s", v)
		}
	})
}

func TestConformance(t *testing.T) {
	channeltest.Run(t, channeltest.Harness{
		Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
			fake := feishutest.New(t)
			noViolations(t, fake)
			ch := newChannel(t, fake, env.Log, env.MediaDir, func(c *Config) { c.ReactEmoji = "" })
			users := map[string]string{channeltest.Alice: aliceID, channeltest.Mallory: malloryID}
			var mu sync.Mutex
			frames := map[channeltest.Emitted]string{}
			return channeltest.Fixture{
				Channel:  ch,
				SenderID: func(user string) string { return users[user] },
				Emit: func(m channeltest.Message) channeltest.Emitted {
					msg := feishutest.Message{From: users[m.From], Text: m.Text}
					if m.Group {
						// Group messages come split across two frames.
						msg.ChatID, msg.ChatType, msg.Split = groupID, "group", 2
						msg.Text = "@_user_1 " + m.Text
						msg.Mentions = []feishutest.Mention{{Key: "@_user_1", OpenID: feishutest.BotOpenID, Name: feishutest.BotName}}
					}
					p := fake.Push(msg)
					em := channeltest.Emitted{ChatID: p.ChatID, MessageID: p.MessageID}
					mu.Lock()
					frames[em] = p.FrameID
					mu.Unlock()
					return em
				},
				EmitMalformed: func() {
					fake.PushGarbage()
					fake.PushRaw([]byte(`{"schema":"2.0","header":{"event_type":"im.message.receive_v1"},"event":{"message":{"message_id":42,"content":7}}}`))
				},
				Drop: fake.Drop,
				Sent: func() []channeltest.Sent {
					var out []channeltest.Sent
					for _, s := range fake.Sent() {
						out = append(out, channeltest.Sent{ChatID: s.ChatID, MessageID: s.MessageID, Edit: s.Edit, Text: s.Text, At: s.At})
					}
					return out
				},
				Acked: func(e channeltest.Emitted) bool {
					mu.Lock()
					id, ok := frames[e]
					mu.Unlock()
					return ok && fake.Acked(id)
				},
			}
		},
	})
}

// running runs ch until the test ends.
func running(t *testing.T, ch channels.Channel, in channels.Inbox) {
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

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// outbound is a reply to in, as the agent makes it.
func outbound(in bus.Inbound, text string) bus.Outbound {
	return bus.Outbound{Channel: in.Channel, ChatID: in.ChatID, Kind: bus.KindMessage, Content: text, ReplyTo: in.MessageID, Metadata: in.Metadata, SessionKey: in.Key(), Final: true}
}
