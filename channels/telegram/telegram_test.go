package telegram

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

var (
	alice   = telegramtest.User{ID: 1001, Username: "alice", FirstName: "Alice"}
	mallory = telegramtest.User{ID: 1002, Username: "mallory", FirstName: "Mallory"}
	group   = telegramtest.Chat{ID: -100777, Type: "supergroup", Title: "Test group"}
	forum   = telegramtest.Chat{ID: -100888, Type: "supergroup", Title: "Forum", IsForum: true}
)

func private(u telegramtest.User) telegramtest.Chat {
	return telegramtest.Chat{ID: u.ID, Type: "private"}
}

// newChannel builds a channel against fake with short timings.
func newChannel(t *testing.T, fake *telegramtest.Server, log *slog.Logger, mediaDir string, edit func(*Config)) *Channel {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Enabled, cfg.AllowFrom = true, []string{"*"}
	cfg.Token, cfg.APIBase = telegramtest.Token, fake.URL
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
	ch.pollTimeout = 2 * time.Second // getUpdates timeout=1
	ch.editInterval = 250 * time.Millisecond
	ch.backoffMin, ch.backoffMax = 10*time.Millisecond, 100*time.Millisecond
	return ch
}

func TestConformance(t *testing.T) {
	channeltest.Run(t, channeltest.Harness{
		Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
			fake := telegramtest.New(t)
			ch := newChannel(t, fake, env.Log, env.MediaDir, nil)
			users := map[string]telegramtest.User{channeltest.Alice: alice, channeltest.Mallory: mallory}
			var mu sync.Mutex
			updates := map[channeltest.Emitted]int64{}
			return channeltest.Fixture{
				Channel:  ch,
				SenderID: func(user string) string { u := users[user]; return userID(u.ID, u.Username) },
				Emit: func(m channeltest.Message) channeltest.Emitted {
					u := users[m.From]
					chat, text := private(u), m.Text
					if m.Group {
						chat, text = group, "@"+telegramtest.BotUsername+" "+m.Text
					}
					upd, msg := fake.Send(telegramtest.Msg{From: u, Chat: chat, Text: text})
					e := channeltest.Emitted{ChatID: strconv.FormatInt(chat.ID, 10), MessageID: strconv.FormatInt(msg, 10)}
					mu.Lock()
					updates[e] = upd
					mu.Unlock()
					return e
				},
				EmitMalformed: func() {
					fake.PushRaw(`{"update_id":%d,"message":{"message_id":"not a number","chat":{"id":"nope"},"text":42}}`)
				},
				Drop: fake.Drop,
				Sent: func() []channeltest.Sent {
					var out []channeltest.Sent
					for _, s := range fake.Sent() {
						out = append(out, channeltest.Sent{
							ChatID: strconv.FormatInt(s.ChatID, 10), MessageID: strconv.FormatInt(s.MessageID, 10),
							Edit: s.Edit, Text: s.Rendered, At: s.At,
						})
					}
					return out
				},
				Acked: func(e channeltest.Emitted) bool {
					mu.Lock()
					upd, ok := updates[e]
					mu.Unlock()
					return ok && fake.Acked(upd)
				},
				Drafts: func(chat string) []channeltest.Sent {
					id, _ := strconv.ParseInt(chat, 10, 64)
					var out []channeltest.Sent
					for _, d := range fake.Drafts(id) {
						out = append(out, channeltest.Sent{ChatID: chat, Text: d.Visible, At: d.At})
					}
					return out
				},
			}
		},
	})
}

// inbox records what the channel delivers.
type inbox struct {
	mu  sync.Mutex
	got []bus.Inbound
}

func (in *inbox) Deliver(ctx context.Context, m bus.Inbound) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.got = append(in.got, m)
	return nil
}

// Admits implements channels.Admitter: everyone but mallory, as a gate
// with allowFrom without her would.
func (in *inbox) Admits(channel, senderID string) bool {
	return !strings.HasSuffix(senderID, "|"+mallory.Username)
}

func (in *inbox) all() []bus.Inbound {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]bus.Inbound(nil), in.got...)
}

// wait returns the first delivered message whose content contains text.
func (in *inbox) wait(t *testing.T, text string) bus.Inbound {
	t.Helper()
	var got bus.Inbound
	waitfor.True(t, "inbound "+strconv.Quote(text), func() bool {
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

// run starts ch and stops it when the test ends.
func run(t *testing.T, ch *Channel) *inbox {
	t.Helper()
	in := start(t, ch)
	waitfor.True(t, "the channel to connect", func() bool { return ch.Health().State == channels.StateConnected })
	return in
}

// start runs ch until the test ends, without waiting for it to connect.
func start(t *testing.T, ch *Channel) *inbox {
	t.Helper()
	in := &inbox{}
	startWith(t, ch, in)
	return in
}

// startWith runs ch delivering to in until the test ends.
func startWith(t *testing.T, ch *Channel, in channels.Inbox) {
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
			t.Error("Run did not return within 5 s")
		}
	})
}

func TestDefaults(t *testing.T) {
	fake := telegramtest.New(t)
	ch, err := New(Config{Token: telegramtest.Token, APIBase: fake.URL}, channels.Deps{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if got := ch.EditInterval(); got != time.Second {
		t.Errorf("EditInterval = %s, want 1s", got)
	}
	if got := ch.MessageLimit(); got != 4096 {
		t.Errorf("MessageLimit = %d, want 4096", got)
	}
	if got := ch.cfg.GroupPolicy; got != channels.GroupMention {
		t.Errorf("GroupPolicy = %q, want %q", got, channels.GroupMention)
	}
	if got := ch.cfg.MaxMediaBytes; got != 20<<20 {
		t.Errorf("MaxMediaBytes = %d, want 20 MB", got)
	}
	if got := ch.cfg.StreamMode; got != StreamDraft {
		t.Errorf("StreamMode = %q, want %q", got, StreamDraft)
	}
	if d := DefaultConfig(); !d.Streaming || d.StreamMode != StreamDraft {
		t.Errorf("DefaultConfig streaming %v, streamMode %q: want streaming as drafts", d.Streaming, d.StreamMode)
	}
	if got := ch.Health().State; got != channels.StateStarting {
		t.Errorf("Health before Run = %s, want starting", got)
	}
}

func TestFactoryDecodesConfig(t *testing.T) {
	raw := map[string]any{
		"enabled": true, "token": "42:abc", "allowFrom": []any{"1001", "alice"}, "proxy": "socks5://127.0.0.1:1080",
		"replyToMessage": true, "groupPolicy": "open", "apiBase": "http://127.0.0.1:8081/",
		"maxMediaBytes": 1234, "transcription": map[string]any{"apiBase": "http://127.0.0.1:9000/v1", "apiKey": "k", "model": "whisper-large-v3"},
		"streaming": false, "streamMode": "edit",
	}
	cfg := configs.ChannelsConfig{Platforms: map[string]map[string]any{"telegram": raw}}
	got, err := Factory().New(cfg, channels.Deps{})
	if err != nil {
		t.Fatalf("Factory().New: %v", err)
	}
	c := got.(*Channel).cfg
	if !c.Enabled || c.Token != "42:abc" || len(c.AllowFrom) != 2 || c.Proxy != "socks5://127.0.0.1:1080" || !c.ReplyToMessage ||
		c.GroupPolicy != "open" || c.APIBase != "http://127.0.0.1:8081" || c.MaxMediaBytes != 1234 ||
		c.Transcription.Model != "whisper-large-v3" || c.Transcription.APIKey != "k" || c.Streaming || c.StreamMode != StreamEdit {
		t.Errorf("decoded config = %+v", c)
	}
	if _, ok := Factory().ConfigType.(Config); !ok {
		t.Errorf("ConfigType = %T, want Config", Factory().ConfigType)
	}
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no token", func(c *Config) { c.Token = "" }, "token: required"},
		{"bad token", func(c *Config) { c.Token = "nocolon" }, "token: not a bot token"},
		{"bad policy", func(c *Config) { c.GroupPolicy = "everyone" }, "groupPolicy"},
		{"bad api base", func(c *Config) { c.APIBase = "ftp://x" }, "apiBase"},
		{"webhook without secret", func(c *Config) { c.WebhookURL = "https://bot.example.com/tg" }, "webhookSecret"},
		{"webhook bad secret", func(c *Config) { c.WebhookURL, c.WebhookSecret = "https://bot.example.com/tg", "has space" }, "webhookSecret"},
		{"negative media cap", func(c *Config) { c.MaxMediaBytes = -1 }, "maxMediaBytes"},
		{"bad stream mode", func(c *Config) { c.StreamMode = "typewriter" }, "streamMode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Token = "1:x"
			tt.edit(&cfg)
			_, err := New(cfg, channels.Deps{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New error = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func TestUnauthorizedTokenEndsRun(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), func(c *Config) { c.Token = "999:wrong" })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := ch.Run(ctx, &inbox{})
	if !errors.Is(err, ErrUnauthorized) || !channels.IsFatal(err) {
		t.Fatalf("Run = %v, want ErrUnauthorized as a fatal error", err)
	}
	if h := ch.Health(); h.State != channels.StateFailed || strings.Contains(h.LastError, "999:wrong") {
		t.Errorf("Health = %+v, want failed without the token", h)
	}
}

// A token revoked while the bot polls (getUpdates answers 401) stops the
// channel for good instead of polling on.
func TestUnauthorizedWhilePollingIsFatal(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), nil)
	fake.Fail("getUpdates", 401, "Unauthorized", 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := ch.Run(ctx, &inbox{})
	if !errors.Is(err, ErrUnauthorized) || !channels.IsFatal(err) {
		t.Fatalf("Run = %v, want ErrUnauthorized as a fatal error", err)
	}
	if n := len(fake.Calls("getUpdates")); n != 1 {
		t.Errorf("getUpdates called %d times, want 1 (no retry after 401)", n)
	}
	if h := ch.Health(); h.State != channels.StateFailed || !strings.Contains(h.LastError, "401") || strings.Contains(h.LastError, telegramtest.Token) {
		t.Errorf("Health = %+v, want failed naming the 401 without the token", h)
	}
}

// A second gateway polling the same bot makes 409 Conflict go on and on:
// past the grace period the channel stops instead of fighting over updates.
func TestLastingConflictIsFatal(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), nil)
	ch.pollTimeout = 200 * time.Millisecond // grace 400 ms
	for range 1000 {
		fake.Fail("getUpdates", 409, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running", 0)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	err := ch.Run(ctx, &inbox{})
	if !errors.Is(err, ErrConflict) || !channels.IsFatal(err) {
		t.Fatalf("Run = %v, want ErrConflict as a fatal error", err)
	}
	if el := time.Since(start); el < ch.conflictGrace() {
		t.Errorf("gave up after %v, before the %v grace", el, ch.conflictGrace())
	}
	if h := ch.Health(); h.State != channels.StateFailed || !strings.Contains(h.LastError, "409") {
		t.Errorf("Health = %+v, want failed naming the conflict", h)
	}
}

func TestPollFailuresShowInHealthAndRecover(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), nil)
	for range 3 {
		fake.Fail("getUpdates", 409, "Conflict: terminated by other getUpdates request", 0)
	}
	// Each failed poll ends a session that was connected for a moment:
	// waiting for "connected" first would race those moments, and the
	// waits between attempts are long enough to be seen.
	ch.backoffMin, ch.backoffMax = 300*time.Millisecond, 600*time.Millisecond
	in := start(t, ch)
	waitfor.True(t, "Health to report the conflict", func() bool {
		h := ch.Health()
		return h.State == channels.StateReconnecting && strings.Contains(h.LastError, "Conflict")
	})
	fake.Send(telegramtest.Msg{From: alice, Chat: private(alice), Text: "still there?"})
	in.wait(t, "still there?")
	waitfor.True(t, "Health to be connected again", func() bool { return ch.Health().State == channels.StateConnected })
}

// The command menu is registered per audience: everyone's commands by
// default, in private chats, groups and for group administrators; the
// admin commands too only in the private chats of the bot's admins.
func TestCommandsRegistered(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), func(c *Config) { c.Admins = []string{"1001", "carol", "1001|alice"} })
	in := run(t, ch)
	everyone := []string{"new", "compact", "stop", "model", "help", "status"}
	admins := append(append([]string(nil), everyone...), "goal", "dream", "skill", "restart")
	want := map[string][]string{
		"default": everyone, "all_private_chats": everyone, "all_group_chats": everyone, "all_chat_administrators": everyone,
		"chat:1001": admins,
	}
	check := func() {
		t.Helper()
		if got := fake.Menus(); len(got) != len(want) {
			t.Errorf("menus for %q, want %d scopes", got, len(want))
		}
		for scope, names := range want {
			if got := fake.Commands(scope); strings.Join(got, " ") != strings.Join(names, " ") {
				t.Errorf("menu of %s = %q, want %q", scope, got, names)
			}
		}
	}
	check()
	if n := len(fake.Calls("setMyCommands")); n != len(want) {
		t.Errorf("setMyCommands called %d times, want once per scope (%d)", n, len(want))
	}
	// Registering again (a reload) leaves every menu as it was.
	ch.registerMenus(context.Background())
	check()

	fake.Send(telegramtest.Msg{From: alice, Chat: private(alice), Text: "/help@" + telegramtest.BotUsername})
	fake.Send(telegramtest.Msg{From: alice, Chat: private(alice), Text: "/new"})
	waitfor.True(t, "both commands", func() bool { return len(in.all()) == 2 })
	got := in.all()
	if got[0].Content != "/help" || got[1].Content != "/new" {
		t.Errorf("commands arrived as %q and %q, want /help and /new", got[0].Content, got[1].Content)
	}
}

// Without an admins list the admins are the ones allowFrom names, as for
// the gateway's access control; "*" and usernames name no chat.
func TestAdminMenuFollowsAllowFrom(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), func(c *Config) { c.AllowFrom = []string{"*", "bob", " 2002 "} })
	if got := ch.adminChats(); len(got) != 1 || got[0] != 2002 {
		t.Errorf("admin chats %v, want [2002]", got)
	}
	ch = newChannel(t, fake, nil, t.TempDir(), nil) // allowFrom "*": no admin by name
	if got := ch.adminChats(); len(got) != 0 {
		t.Errorf("admin chats %v with allowFrom *", got)
	}
}

func TestSenderIDWithoutUsername(t *testing.T) {
	fake := telegramtest.New(t)
	in := run(t, newChannel(t, fake, nil, t.TempDir(), nil))
	anon := telegramtest.User{ID: 2002}
	fake.Send(telegramtest.Msg{From: anon, Chat: private(anon), Text: "no username here"})
	if got := in.wait(t, "no username").SenderID; got != "2002" {
		t.Errorf("SenderID = %q, want 2002", got)
	}
}

// Starting does not wait for each set-up call in turn: while getMe is
// still unanswered, the commands are registered and the webhook removed
// already, and polling starts once getMe answers (the start costs the
// slowest call, not the sum of three round trips).
func TestStartCallsRunAtOnce(t *testing.T) {
	fake := telegramtest.New(t)
	release := fake.Hold("getMe")
	defer release()
	ch := newChannel(t, fake, nil, t.TempDir(), nil)
	start(t, ch)
	waitfor.True(t, "setMyCommands and deleteWebhook while getMe is held", func() bool {
		return len(fake.Calls("getMe")) == 1 && len(fake.Calls("setMyCommands")) == len(ch.menus()) && len(fake.Calls("deleteWebhook")) == 1
	})
	if n := fake.Polls(); n != 0 {
		t.Fatalf("%d polls before getMe answered", n)
	}
	release()
	waitfor.True(t, "polling after getMe answered", func() bool { return fake.Polls() > 0 })
}

// With the gateway's command list (channels.Deps.Commands) the menus are
// made from it: a command whose help ends in "(admins)" only in the
// admins' chats, a name Telegram cannot show left out, the first clause
// of the help as the line.
func TestMenusFromTheGatewaysCommands(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), func(c *Config) { c.Admins = []string{"1001"} })
	ch.commands = []bus.Command{
		{Name: "new", Help: "start a new conversation"},
		{Name: "usage", Help: "show tokens and cost; /usage all for everyone's"},
		{Name: "dream-log", Help: "list the kept versions"},
		{Name: "restart", Help: "stop the gateway and start it again (admins)"},
	}
	ch.registerMenus(context.Background())
	if got := fake.Commands("all_private_chats"); strings.Join(got, " ") != "new usage" {
		t.Errorf("everyone's menu %q, want new usage", got)
	}
	if got := fake.Commands("chat:1001"); strings.Join(got, " ") != "new usage restart" {
		t.Errorf("the admin's menu %q, want new usage restart", got)
	}
	everyone, _ := ch.menuCommands()
	if everyone[1].Description != "Show tokens and cost" {
		t.Errorf("menu line %q", everyone[1].Description)
	}
}
