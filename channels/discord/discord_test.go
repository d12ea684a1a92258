package discord

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/discord/discordtest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

var (
	alice   = discordtest.User{ID: "1001", Username: "alice"}
	mallory = discordtest.User{ID: "1002", Username: "mallory"}
)

const (
	guild    = "7000"
	general  = "7001" // a guild text channel
	thread   = "7002" // a thread under general
	dmPrefix = "800"  // DM channel ids: dmPrefix + user id
)

func dm(u discordtest.User) string { return dmPrefix + u.ID }

func mention() string { return "<@" + discordtest.Bot.ID + "> " }

// newChannel builds a channel against fake with short timings.
func newChannel(t *testing.T, fake *discordtest.Server, log *slog.Logger, edit func(*Config)) *Channel {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Enabled, cfg.AllowFrom = true, []string{"*"}
	cfg.Token, cfg.APIBase = discordtest.Token, fake.URL
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
			fake := discordtest.New(t)
			ch := newChannel(t, fake, env.Log, nil)
			users := map[string]discordtest.User{channeltest.Alice: alice, channeltest.Mallory: mallory}
			return channeltest.Fixture{
				Channel:  ch,
				SenderID: func(user string) string { return users[user].ID + "|" + users[user].Username },
				Emit: func(m channeltest.Message) channeltest.Emitted {
					u := users[m.From]
					msg := discordtest.Msg{From: u, ChannelID: dm(u), Content: m.Text}
					if m.Group {
						msg.ChannelID, msg.GuildID = general, guild
						msg.Content = mention() + m.Text
						msg.Mentions = []discordtest.User{discordtest.Bot}
					}
					id := fake.Send(msg)
					return channeltest.Emitted{ChatID: msg.ChannelID, MessageID: id}
				},
				EmitMalformed: func() {
					fake.PushRaw(`{"id":42,"channel_id":{"nope":true},"author":"mallory","content":7}`)
				},
				Drop: fake.Drop,
				Sent: func() []channeltest.Sent {
					var out []channeltest.Sent
					for _, s := range fake.Sent() {
						out = append(out, channeltest.Sent{ChatID: s.ChannelID, MessageID: s.MessageID, Edit: s.Edit, Text: s.Content, At: s.At})
					}
					return out
				},
				// Acked stays nil: Discord has no per-message acknowledgement
				// (a gateway dispatch is delivered once, whatever the bot
				// does), so the ack checks have nothing to observe.
			}
		},
	})
}

// inbox records what the channel delivers.
type inbox struct {
	mu  sync.Mutex
	got []bus.Inbound
}

func (in *inbox) Deliver(_ context.Context, m bus.Inbound) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.got = append(in.got, m)
	return nil
}

// Admits implements channels.Admitter: everyone but mallory.
func (in *inbox) Admits(_, senderID string) bool {
	return senderID != userID(&discordgo.User{ID: mallory.ID, Username: mallory.Username})
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

// run starts ch, waits until it is connected, and stops it when the test ends.
func run(t *testing.T, ch *Channel) *inbox {
	t.Helper()
	in := &inbox{}
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
	waitfor.True(t, "connected", func() bool { return ch.Health().State == channels.StateConnected })
	return in
}

func TestMentionPolicy(t *testing.T) {
	fake := discordtest.New(t)
	ch := newChannel(t, fake, nil, nil)
	in := run(t, ch)
	fake.Send(discordtest.Msg{From: alice, ChannelID: general, GuildID: guild, Content: "chatter not for the bot"})
	fake.Send(discordtest.Msg{From: alice, ChannelID: general, GuildID: guild, Content: "<@!" + discordtest.Bot.ID + "> nickname mention"})
	bot := discordtest.Bot
	fake.Send(discordtest.Msg{From: alice, ChannelID: general, GuildID: guild, Content: "a reply to the bot", ReplyToAuthor: &bot})
	fake.Send(discordtest.Msg{From: discordtest.User{ID: "55", Username: "otherbot", Bot: true}, ChannelID: general, GuildID: guild, Content: mention() + "from a bot"})
	fake.Send(discordtest.Msg{From: alice, ChannelID: dm(alice), Content: "a direct message"})
	got := in.wait(t, "nickname mention")
	if got.Content != "nickname mention" {
		t.Errorf("Content = %q, want the leading mention stripped", got.Content)
	}
	if !got.IsGroup || got.SenderID != "1001|alice" {
		t.Errorf("IsGroup %v SenderID %q", got.IsGroup, got.SenderID)
	}
	in.wait(t, "a reply to the bot")
	if dmMsg := in.wait(t, "a direct message"); dmMsg.IsGroup {
		t.Error("a direct message has IsGroup")
	}
	for _, m := range in.all() {
		if strings.Contains(m.Content, "chatter") || strings.Contains(m.Content, "from a bot") {
			t.Errorf("delivered %q, want it skipped", m.Content)
		}
	}
}

func TestOpenPolicyAndAllowChannels(t *testing.T) {
	fake := discordtest.New(t)
	ch := newChannel(t, fake, nil, func(c *Config) { c.GroupPolicy, c.AllowChannels = channels.GroupOpen, []string{general} })
	in := run(t, ch)
	fake.Send(discordtest.Msg{From: alice, ChannelID: "7999", GuildID: guild, Content: "elsewhere"})
	fake.Send(discordtest.Msg{From: alice, ChannelID: general, GuildID: guild, Content: "no mention needed"})
	in.wait(t, "no mention needed")
	for _, m := range in.all() {
		if m.Content == "elsewhere" {
			t.Error("a channel outside allowChannels was delivered")
		}
	}
}

func TestThreadIsItsOwnSession(t *testing.T) {
	fake := discordtest.New(t)
	ch := newChannel(t, fake, nil, nil)
	in := run(t, ch)
	fake.Send(discordtest.Msg{From: alice, ChannelID: general, GuildID: guild, Content: mention() + "in the channel", Mentions: []discordtest.User{discordtest.Bot}})
	fake.Send(discordtest.Msg{From: alice, ChannelID: thread, GuildID: guild, Content: mention() + "in the thread", Mentions: []discordtest.User{discordtest.Bot}})
	parent, th := in.wait(t, "in the channel"), in.wait(t, "in the thread")
	if th.ChatID != thread || th.Key() != "discord:"+thread {
		t.Errorf("thread message: ChatID %q key %q, want %q", th.ChatID, th.Key(), "discord:"+thread)
	}
	if parent.Key() == th.Key() {
		t.Errorf("thread and parent share session %q", th.Key())
	}
	if _, err := ch.Send(t.Context(), bus.Outbound{ChatID: th.ChatID, Content: "answer in thread", ReplyTo: th.MessageID}); err != nil {
		t.Fatal(err)
	}
	if s := fake.Sent(); len(s) != 1 || s[0].ChannelID != thread {
		t.Errorf("sent %+v, want one message in the thread", s)
	}
}

func TestRateLimitIsRetryAfter(t *testing.T) {
	fake := discordtest.New(t)
	ch := newChannel(t, fake, nil, nil)
	fake.RateLimit(2, 1500*time.Millisecond)
	_, err := ch.Send(t.Context(), bus.Outbound{ChatID: general, Content: "hi"})
	var ra *channels.RetryAfterError
	if !errors.As(err, &ra) || ra.After != 1500*time.Millisecond {
		t.Fatalf("Send err = %v, want RetryAfterError 1.5s", err)
	}
	err = ch.Edit(t.Context(), channels.MessageRef{ChatID: general, MessageID: "1"}, bus.Outbound{Content: "x"})
	if !errors.As(err, &ra) {
		t.Fatalf("Edit err = %v, want RetryAfterError", err)
	}
	if _, err := ch.Send(t.Context(), bus.Outbound{ChatID: general, Content: "hi"}); err != nil {
		t.Fatalf("Send after the limit: %v", err)
	}
}

func TestPermanentErrors(t *testing.T) {
	fake := discordtest.New(t)
	ch := newChannel(t, fake, nil, nil)
	for _, st := range []int{403, 404} {
		fake.FailNext(st)
		_, err := ch.Send(t.Context(), bus.Outbound{ChatID: general, Content: "hi"})
		var pe *channels.PermanentError
		if !errors.As(err, &pe) {
			t.Errorf("status %d: err = %v, want PermanentError", st, err)
		}
	}
}

func TestReplyToMessageAndTyping(t *testing.T) {
	fake := discordtest.New(t)
	ch := newChannel(t, fake, nil, func(c *Config) { c.ReplyToMessage = true })
	if _, err := ch.Send(t.Context(), bus.Outbound{ChatID: general, Content: "#### Title", ReplyTo: "42"}); err != nil {
		t.Fatal(err)
	}
	if s := fake.Sent(); len(s) != 1 || s[0].ReplyTo != "42" || s[0].Content != "**Title**" {
		t.Errorf("sent %+v, want a reply to 42 with the heading as bold", s)
	}
	if err := ch.Typing(t.Context(), general, nil); err != nil {
		t.Errorf("Typing: %v", err)
	}
}

func TestResumeAfterDrop(t *testing.T) {
	fake := discordtest.New(t)
	ch := newChannel(t, fake, nil, nil)
	in := run(t, ch)
	fake.Send(discordtest.Msg{From: alice, ChannelID: dm(alice), Content: "one"})
	in.wait(t, "one")
	fake.Drop()
	// discordgo resumes at once, so "reconnecting" may last too short to
	// poll; the resume count below shows the drop was noticed.
	fake.Send(discordtest.Msg{From: alice, ChannelID: dm(alice), Content: "two"})
	in.wait(t, "two")
	if ids, resumes, _ := fake.Counts(); ids != 1 || resumes != 1 {
		t.Errorf("identifies %d resumes %d, want 1 and 1", ids, resumes)
	}
	waitfor.True(t, "connected", func() bool { return ch.Health().State == channels.StateConnected })
}

func TestConfig(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no token", func(c *Config) { c.Token = "" }, "token"},
		{"bot prefix", func(c *Config) { c.Token = "Bot x" }, "prefix"},
		{"policy", func(c *Config) { c.GroupPolicy = "sometimes" }, "groupPolicy"},
		{"apiBase", func(c *Config) { c.APIBase = "ftp://x" }, "apiBase"},
	} {
		c := DefaultConfig()
		c.Token = "t"
		tt.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate = %v, want an error about %s", tt.name, err, tt.want)
		}
	}
}

// Close codes no retry can fix stop the channel for good, also when they
// come on a reconnect after the channel had been up.
func TestFatalCloseCodes(t *testing.T) {
	t.Run("4004 at connect", func(t *testing.T) {
		fake := discordtest.New(t)
		ch := newChannel(t, fake, nil, func(c *Config) { c.Token = "not-the-token" })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := ch.Run(ctx, &inbox{})
		if !errors.Is(err, ErrUnauthorized) || !channels.IsFatal(err) || !strings.Contains(err.Error(), "4004") {
			t.Fatalf("Run = %v, want ErrUnauthorized (4004) as a fatal error", err)
		}
		if h := ch.Health(); h.State != channels.StateFailed || strings.Contains(h.LastError, "not-the-token") {
			t.Errorf("Health = %+v, want failed without the token", h)
		}
	})
	t.Run("4014 on reconnect", func(t *testing.T) {
		fake := discordtest.New(t)
		ch := newChannel(t, fake, nil, nil)
		done := make(chan error, 1)
		go func() { done <- ch.Run(t.Context(), &inbox{}) }()
		waitfor.True(t, "connected", func() bool { return ch.Health().State == channels.StateConnected })
		fake.CloseOnIdentify(4014)
		fake.Drop()
		select {
		case err := <-done:
			if !errors.Is(err, ErrIntents) || !channels.IsFatal(err) {
				t.Fatalf("Run = %v, want ErrIntents as a fatal error", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run kept reconnecting after close 4014")
		}
		if h := ch.Health(); h.State != channels.StateFailed || !strings.Contains(h.LastError, "4014") {
			t.Errorf("Health = %+v, want failed naming 4014", h)
		}
	})
}

// TestGroupPolicyPath: an unknown groupPolicy in config.json is refused at
// start with the path of the key, and "allowlist" needs groupAllowFrom.
func TestGroupPolicyPath(t *testing.T) {
	reg := channels.NewRegistry()
	if err := reg.Register("discord", Factory()); err != nil {
		t.Fatal(err)
	}
	for policy, want := range map[string]string{
		"sometimes": `channels.discord: groupPolicy: "sometimes" is not "mention", "open" or "allowlist"`,
		"allowlist": `channels.discord: groupAllowFrom: required with groupPolicy "allowlist"`,
	} {
		cfg := configs.ChannelsConfig{Platforms: map[string]map[string]any{
			"discord": {"enabled": true, "token": "t", "groupPolicy": policy},
		}}
		_, err := reg.Build(cfg, channels.Deps{})
		if err == nil || err.Error() != want {
			t.Errorf("groupPolicy %q: Build = %v, want %q", policy, err, want)
		}
	}
}
