package slack

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/slack/slacktest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// table is a command table shaped like the gateway's.
var table = []bus.Command{
	{Name: "new", Help: "start a new conversation"},
	{Name: "model", Help: "list the model presets; /model <preset> switches this chat",
		Args: []bus.CommandArg{{Name: "preset", Help: "a preset"}}},
	{Name: "skill", Help: "list the skills; /skill enable NAME (admins)",
		Args: []bus.CommandArg{{Name: "action", Choices: []string{"show", "enable", "disable"}}, {Name: "name"}}},
	{Name: "help", Help: "show this help"},
}

// slashChannel builds a channel with the command table.
func slashChannel(t *testing.T, fake *slacktest.Server, edit func(*Config)) *Channel {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Enabled, cfg.AllowFrom = true, []string{"*"}
	cfg.AppToken, cfg.BotToken, cfg.APIBase = slacktest.AppToken, slacktest.BotToken, fake.APIBase()
	if edit != nil {
		edit(&cfg)
	}
	ch, err := New(cfg, channels.Deps{Commands: table})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ch.backoffMin, ch.backoffMax = 10*time.Millisecond, 100*time.Millisecond
	return ch
}

func waitFor(t *testing.T, in *inbox, what string, match func(bus.Inbound) bool) bus.Inbound {
	t.Helper()
	var got bus.Inbound
	waitfor.True(t, what, func() bool {
		for _, m := range in.all() {
			if match(m) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

func fromSlash(trigger string) func(bus.Inbound) bool {
	return func(m bus.Inbound) bool { return m.MessageID == "slash:"+trigger }
}

// TestSlashCommandIsTheTextCommand: "/nanobot new" in a direct message
// reaches the gateway as "/new" typed there would (sender, chat, group,
// session), acknowledged at once with nothing to show; "/nanobot" takes
// any command with its arguments, alone it is /help, a question stays a
// question, and a command of its own in the manifest ("/new") is that
// command.
func TestSlashCommandIsTheTextCommand(t *testing.T) {
	fake := slacktest.New(t)
	in := &inbox{}
	run(t, slashChannel(t, fake, nil), in)
	fake.Push(slacktest.Event{Channel: dm(aliceID), ChannelType: "im", User: aliceID, Text: "/new"})
	typed := waitFor(t, in, "the typed /new", func(m bus.Inbound) bool { return m.Content == "/new" })
	env, trigger := fake.RunSlash(slacktest.Slash{Command: "/nanobot", Text: "new", Channel: dm(aliceID), ChannelName: "directmessage", User: aliceID})
	slash := waitFor(t, in, "the slash /new", fromSlash(trigger))
	if slash.Content != "/new" || slash.SenderID != typed.SenderID || slash.ChatID != typed.ChatID || slash.IsGroup != typed.IsGroup || slash.Key() != typed.Key() || slash.Admin {
		t.Errorf("slash %+v\ntyped %+v", slash, typed)
	}
	waitfor.True(t, "the acknowledgement", func() bool { return fake.Acked(env) })
	ack, ok := fake.AckOf(env)
	if !ok || ack.After > 3*time.Second || (len(ack.Payload) != 0 && string(ack.Payload) != "null") {
		t.Errorf("ack %+v %v, want an empty one within 3 s", ack, ok)
	}

	for _, tt := range []struct{ command, text, want string }{
		{"/nanobot", "model  gpt-5", "/model  gpt-5"},
		{"/nanobot", "", "/help"},
		{"/nanobot", "/stop", "/stop"},
		{"/nanobot", "Skill enable weather", "/Skill enable weather"},
		{"/nanobot", "what is 2 &amp; 2?", "what is 2 & 2?"},
		{"/new", "", "/new"},
		{"/model", "fast", "/model fast"},
	} {
		_, trigger := fake.RunSlash(slacktest.Slash{Command: tt.command, Text: tt.text, Channel: dm(aliceID), ChannelName: "directmessage", User: aliceID})
		if got := waitFor(t, in, tt.command+" "+tt.text, fromSlash(trigger)); got.Content != tt.want {
			t.Errorf("%s %q: Content %q, want %q", tt.command, tt.text, got.Content, tt.want)
		}
	}

	// In a channel: the channel's conversation (Slack does not say which
	// thread a command was typed in), whatever the mention policy.
	_, trigger = fake.RunSlash(slacktest.Slash{Command: "/nanobot", Text: "new", Channel: general, User: aliceID})
	m := waitFor(t, in, "the slash /new in a channel", fromSlash(trigger))
	if !m.IsGroup || m.Key() != "slack:"+general || m.ThreadID != "" {
		t.Errorf("in a channel: %+v", m)
	}
}

// TestSlashAnswerInTheConversation: the answer is posted in the
// conversation (not in a thread, no reactions: there is no message to
// mark); where the bot cannot post it goes to the command's response_url,
// to the asker only.
func TestSlashAnswerInTheConversation(t *testing.T) {
	fake := slacktest.New(t)
	in := &inbox{}
	ch := slashChannel(t, fake, nil)
	run(t, ch, in)
	_, trigger := fake.RunSlash(slacktest.Slash{Command: "/nanobot", Text: "new", Channel: general, User: aliceID})
	m := waitFor(t, in, "/new", fromSlash(trigger))
	answer := bus.Outbound{Channel: "slack", ChatID: m.ChatID, Kind: bus.KindMessage, Content: "New **conversation** started.", ReplyTo: m.MessageID, Metadata: m.Metadata, Final: true}
	if _, err := ch.Send(t.Context(), answer); err != nil {
		t.Fatal(err)
	}
	if s := fake.Sent(); len(s) != 1 || s[0].Channel != general || s[0].ThreadTS != "" || s[0].Rendered != "New *conversation* started." {
		t.Errorf("sent %+v, want the answer in the channel", s)
	}
	if r := fake.Reactions(); len(r) != 0 {
		t.Errorf("reactions %+v, want none", r)
	}

	_, trigger = fake.RunSlash(slacktest.Slash{Command: "/nanobot", Text: "status", Channel: "CELSEWHERE", User: aliceID})
	m = waitFor(t, in, "/status", fromSlash(trigger))
	fake.FailPost("not_in_channel", 0)
	answer = bus.Outbound{Channel: "slack", ChatID: m.ChatID, Content: "Model: test", ReplyTo: m.MessageID, Metadata: m.Metadata, Final: true}
	if _, err := ch.Send(t.Context(), answer); err != nil {
		t.Fatalf("Send where the bot is not a member: %v", err)
	}
	if r := fake.Responses(); len(r) != 1 || r[0].Trigger != trigger || r[0].Text != "Model: test" || r[0].ResponseType != "ephemeral" {
		t.Errorf("responses %+v, want the answer to the asker", r)
	}
	// Not for other messages: a failure stays a failure.
	fake.FailPost("not_in_channel", 0)
	_, err := ch.Send(t.Context(), bus.Outbound{Channel: "slack", ChatID: "CELSEWHERE", Content: "hi"})
	var pe *channels.PermanentError
	if !errors.As(err, &pe) {
		t.Errorf("Send of a plain message = %v, want a permanent error", err)
	}
}

// TestSlashCommandRefused: a sender the gate refuses is refused as for
// typed text (nothing delivered, nothing answered); in a channel the bot
// does not serve the command is refused in the acknowledgement; a command
// the gateway could not take is answered with an apology.
func TestSlashCommandRefused(t *testing.T) {
	fake := slacktest.New(t)
	in := &inbox{deny: malloryID}
	run(t, slashChannel(t, fake, func(c *Config) {
		c.GroupPolicy, c.AllowChannels = channels.GroupAllowlist, []string{general}
	}), in)
	env, _ := fake.RunSlash(slacktest.Slash{Command: "/nanobot", Text: "new", Channel: dm(malloryID), ChannelName: "directmessage", User: malloryID})
	other, _ := fake.RunSlash(slacktest.Slash{Command: "/nanobot", Text: "new", Channel: "COTHER", User: aliceID})
	_, after := fake.RunSlash(slacktest.Slash{Command: "/nanobot", Text: "new", Channel: general, User: aliceID})
	waitFor(t, in, "the command after them", fromSlash(after))
	waitfor.True(t, "both acknowledged", func() bool { return fake.Acked(env) && fake.Acked(other) })
	ack, _ := fake.AckOf(other)
	if !strings.Contains(string(ack.Payload), "I don't take commands in this channel") {
		t.Errorf("ack in a channel not served: %s", ack.Payload)
	}
	for _, m := range in.all() {
		if m.SenderID == malloryID || m.ChatID == "COTHER" {
			t.Errorf("delivered %+v", m)
		}
	}
	if r := fake.Responses(); len(r) != 0 {
		t.Errorf("responses %+v", r)
	}
}

// failing is an inbox that takes nothing.
type failing struct{}

func (failing) Deliver(context.Context, bus.Inbound) error { return errors.New("disk full") }

func TestSlashCommandNotTaken(t *testing.T) {
	fake := slacktest.New(t)
	ch := slashChannel(t, fake, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, failing{}) }()
	defer func() { cancel(); <-done }()
	_, trigger := fake.RunSlash(slacktest.Slash{Command: "/nanobot", Text: "new", Channel: general, User: aliceID})
	waitfor.True(t, "the apology", func() bool { return len(fake.Responses()) == 1 })
	if r := fake.Responses()[0]; r.Trigger != trigger || !strings.Contains(r.Text, "could not take") {
		t.Errorf("response %+v", r)
	}
}

// TestAppHome: opening the Home tab publishes a view with how to reach
// the bot, whether the user may, every command as "/nanobot ..." and the
// workbench link; the Messages tab publishes nothing.
func TestAppHome(t *testing.T) {
	fake := slacktest.New(t)
	in := &inbox{stranger: malloryID}
	run(t, slashChannel(t, fake, func(c *Config) { c.WorkbenchURL = "https://bot.example.com/" }), in)
	fake.OpenHome(aliceID, "messages")
	env := fake.OpenHome(aliceID, "home")
	waitfor.True(t, "the Home tab", func() bool { return len(fake.Views()) == 1 })
	waitfor.True(t, "app_home_opened acknowledged", func() bool { return fake.Acked(env) })
	v := fake.Views()[0]
	text := v.Text()
	for _, want := range []string{
		"<@" + aliceID + ">", "<@" + slacktest.BotUserID + ">", "You can talk to me", "Commands",
		"`/nanobot new` — start a new conversation",
		"`/nanobot model [preset]` — list the model presets",
		"`/nanobot skill [show|enable|disable] [name]` — list the skills; /skill enable NAME (admins)",
		"<https://bot.example.com/|Open the workbench>",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the Home tab lacks %q:\n%s", want, text)
		}
	}
	if v.User != aliceID {
		t.Errorf("published for %q", v.User)
	}
	fake.OpenHome(malloryID, "home")
	waitfor.True(t, "mallory's Home tab", func() bool { return len(fake.Views()) == 2 })
	if v := fake.Views()[1]; v.User != malloryID || !strings.Contains(v.Text(), "pairing code") || strings.Contains(v.Text(), "You can talk to me") {
		t.Errorf("a stranger's Home tab:\n%s", v.Text())
	}
}

func TestAppHomeOff(t *testing.T) {
	fake := slacktest.New(t)
	in := &inbox{}
	off := false
	run(t, slashChannel(t, fake, func(c *Config) { c.AppHome = &off }), in)
	env := fake.OpenHome(aliceID, "home")
	fake.Push(slacktest.Event{Channel: dm(aliceID), ChannelType: "im", User: aliceID, Text: "after"})
	in.wait(t, "after") // handled after the Home event, in order
	waitfor.True(t, "the Home event acknowledged", func() bool { return fake.Acked(env) })
	if v := fake.Views(); len(v) != 0 {
		t.Errorf("views %+v: want nothing published", v)
	}
}

func TestSlashConfig(t *testing.T) {
	for _, tt := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.SlashCommand = "nanobot" }, "slashCommand"},
		{func(c *Config) { c.SlashCommand = "/Nano Bot" }, "slashCommand"},
		{func(c *Config) { c.WorkbenchURL = "ftp://x" }, "workbenchURL"},
	} {
		c := DefaultConfig()
		c.AppToken, c.BotToken = "xapp-1", "xoxb-1"
		tt.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate = %v, want an error about %s", err, tt.want)
		}
	}
	c := DefaultConfig()
	c.AppToken, c.BotToken = "xapp-1", "xoxb-1"
	if err := c.Validate(); err != nil || c.SlashCommand != "/nanobot" || !c.appHome() {
		t.Errorf("defaults: %v %q %v", err, c.SlashCommand, c.appHome())
	}
}
