package discord

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/discord/discordtest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// table is a command table shaped like the gateway's.
var table = []bus.Command{
	{Name: "new", Help: "start a new conversation"},
	{Name: "skill", Help: "list the skills; /skill show NAME, /skill enable NAME, /skill disable NAME (admins)",
		Args: []bus.CommandArg{{Name: "action", Help: "what to do", Choices: []string{"show", "enable", "disable"}}, {Name: "name", Help: "the skill"}}},
	{Name: "dream-prompt", Help: "show the dream's instructions; /dream-prompt <text> sets them, /dream-prompt reset goes back to the default ones (admins)",
		Args: []bus.CommandArg{{Name: "text", Help: "the new instructions, or reset"}}},
	{Name: "approve", Help: "run a command the agent asked for (admins)",
		Args: []bus.CommandArg{{Name: "id", Help: "the request's id", Required: true}, {Name: "always", Choices: []string{"always"}}}},
	{Name: "Not A Name", Help: "Discord refuses this name; it is left out"},
}

// slashChannel builds a channel with the command table.
func slashChannel(t *testing.T, fake *discordtest.Server, cmds []bus.Command, edit func(*Config)) *Channel {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Enabled, cfg.AllowFrom = true, []string{"*"}
	cfg.Token, cfg.APIBase = discordtest.Token, fake.URL
	if edit != nil {
		edit(&cfg)
	}
	ch, err := New(cfg, channels.Deps{Commands: cmds})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ch.backoffMin, ch.backoffMax = 10*time.Millisecond, 100*time.Millisecond
	return ch
}

// gate is an inbox that refuses one sender as the gateway's gate does
// (ErrDenied) and can hold deliveries back.
type gate struct {
	mu      sync.Mutex
	got     []bus.Inbound
	refused []bus.Inbound
	deny    string // a sender id refused
	hold    chan struct{}
}

func (g *gate) Deliver(ctx context.Context, m bus.Inbound) error {
	g.mu.Lock()
	hold := g.hold
	g.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if m.SenderID == g.deny {
		g.refused = append(g.refused, m)
		return channels.ErrDenied
	}
	g.got = append(g.got, m)
	return nil
}

func (g *gate) Admits(_, sender string) bool { return sender != g.deny }

func (g *gate) received() []bus.Inbound {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]bus.Inbound(nil), g.got...)
}

func (g *gate) wait(t *testing.T, what string, match func(bus.Inbound) bool) bus.Inbound {
	t.Helper()
	var got bus.Inbound
	waitfor.True(t, what, func() bool {
		for _, m := range g.received() {
			if match(m) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

// runWith runs ch on in until the test ends; it returns a stop that ends
// the run early (a restart) and waits for it.
func runWith(t *testing.T, ch *Channel, in channels.Inbox) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, in) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Error("Run did not return within 10 s")
			}
		})
	}
	t.Cleanup(stop)
	waitfor.True(t, "connected", func() bool { return ch.Health().State == channels.StateConnected })
	return stop
}

func commandNames(cmds []discordtest.AppCommand) []string {
	var out []string
	for _, c := range cmds {
		out = append(out, c.Name)
	}
	return out
}

// TestSlashCommandsRegistered: on connect the table becomes the global
// application commands (one bulk overwrite; arguments as string options,
// choices kept, long descriptions cut but still marked for admins); a
// reconnect does not register again, a restart overwrites with the same
// commands (same ids), and a command no longer in the table disappears.
func TestSlashCommandsRegistered(t *testing.T) {
	fake := discordtest.New(t)
	stale := append([]bus.Command{{Name: "forgotten", Help: "a command of an older version"}}, table...)
	stop := runWith(t, slashChannel(t, fake, stale, nil), &gate{})
	waitfor.True(t, "the first registration", func() bool { return fake.CommandPuts("") == 1 })
	if got := commandNames(fake.Commands("")); !cmp.Equal(got, []string{"forgotten", "new", "skill", "dream-prompt", "approve"}) {
		t.Fatalf("registered %v", got)
	}
	stop()

	ch := slashChannel(t, fake, table, nil)
	runWith(t, ch, &gate{})
	waitfor.True(t, "the registration after a restart", func() bool { return fake.CommandPuts("") == 2 })
	first := fake.Commands("")
	if got := commandNames(first); !cmp.Equal(got, []string{"new", "skill", "dream-prompt", "approve"}) {
		t.Fatalf("after a restart without /forgotten: %v", got)
	}
	byName := map[string]discordtest.AppCommand{}
	for _, c := range first {
		byName[c.Name] = c
	}
	skill := byName["skill"]
	if len(skill.Options) != 2 || skill.Options[0].Name != "action" || skill.Options[0].Type != 3 || len(skill.Options[0].Choices) != 3 || skill.Options[1].Name != "name" || skill.Options[1].Required {
		t.Errorf("/skill options: %+v", skill.Options)
	}
	if d := byName["dream-prompt"].Description; len([]rune(d)) > 100 || !strings.HasSuffix(d, "… (admins)") {
		t.Errorf("/dream-prompt description %q: want at most 100 characters, still ending in (admins)", d)
	}
	if o := byName["approve"].Options; len(o) != 2 || !o[0].Required || o[1].Required {
		t.Errorf("/approve options: %+v, want id required then always", o)
	}

	fake.Drop() // a resume is the same session: nothing to register
	waitfor.True(t, "the resume", func() bool { _, resumes, _ := fake.Counts(); return resumes == 1 })
	waitfor.True(t, "connected again", func() bool { return ch.Health().State == channels.StateConnected })
	if n := fake.CommandPuts(""); n != 2 {
		t.Errorf("%d registrations after a resume, want still 2", n)
	}
	if !cmp.Equal(fake.Commands(""), first) {
		t.Errorf("commands changed: %v", cmp.Diff(first, fake.Commands("")))
	}
}

// TestCommandGuildsAndSwitchingOff: with commandGuilds the commands go to
// those guilds and the global ones are cleared; slashCommands false
// clears them everywhere it manages.
func TestCommandGuildsAndSwitchingOff(t *testing.T) {
	fake := discordtest.New(t)
	stop := runWith(t, slashChannel(t, fake, table, nil), &gate{})
	waitfor.True(t, "global registration", func() bool { return len(fake.Commands("")) == 4 })
	stop()

	stop = runWith(t, slashChannel(t, fake, table, func(c *Config) { c.CommandGuilds = []string{guild} }), &gate{})
	waitfor.True(t, "guild registration", func() bool { return fake.CommandPuts("") == 2 })
	if g, gl := commandNames(fake.Commands(guild)), fake.Commands(""); len(g) != 4 || len(gl) != 0 {
		t.Errorf("guild %v, global %v: want the commands in the guild only", g, commandNames(gl))
	}
	stop()

	off := false
	runWith(t, slashChannel(t, fake, table, func(c *Config) { c.CommandGuilds, c.SlashCommands = []string{guild}, &off }), &gate{})
	waitfor.True(t, "the commands removed", func() bool { return fake.CommandPuts(guild) == 2 && fake.CommandPuts("") == 3 })
	if g, gl := fake.Commands(guild), fake.Commands(""); len(g) != 0 || len(gl) != 0 {
		t.Errorf("with slashCommands off: guild %v, global %v", commandNames(g), commandNames(gl))
	}
}

// TestSlashCommandIsTheTextCommand: a slash command reaches the gateway as
// the text command typed in the same place would (sender, chat, group,
// session), its options in the order they are written, whatever order
// Discord sends them in; it is deferred before anything is answered, and
// the answer completes the deferred response, then follows up.
func TestSlashCommandIsTheTextCommand(t *testing.T) {
	fake := discordtest.New(t)
	ch := slashChannel(t, fake, table, nil)
	in := &gate{}
	runWith(t, ch, in)
	waitfor.True(t, "registration", func() bool { return fake.CommandPuts("") == 1 })

	for _, where := range []struct{ name, channel, guild string }{{"dm", dm(alice), ""}, {"guild", general, guild}, {"thread", thread, guild}} {
		t.Run(where.name, func(t *testing.T) {
			text := "/new"
			if where.guild != "" { // the mention policy needs one for text
				text = mention() + "/new"
			}
			fake.Send(discordtest.Msg{From: alice, ChannelID: where.channel, GuildID: where.guild, Content: text, Mentions: []discordtest.User{discordtest.Bot}})
			typed := in.wait(t, "the typed /new", func(m bus.Inbound) bool {
				return m.ChatID == where.channel && !strings.HasPrefix(m.MessageID, "interaction:")
			})
			id := fake.Invoke(where.channel, where.guild, alice, "new")
			slash := in.wait(t, "the slash /new", func(m bus.Inbound) bool { return m.MessageID == "interaction:"+id })
			if slash.Content != "/new" || slash.SenderID != typed.SenderID || slash.ChatID != typed.ChatID || slash.IsGroup != typed.IsGroup || slash.Key() != typed.Key() || slash.Admin {
				t.Errorf("slash %+v\ntyped %+v", slash, typed)
			}
			cb, ok := fake.Callback(id)
			if !ok || cb.Type != 5 || cb.Flags != 0 {
				t.Fatalf("callback %+v %v, want a public deferred response", cb, ok)
			}
		})
	}

	id := fake.Invoke(general, guild, alice, "skill", discordtest.Option{Name: "name", Value: "weather"}, discordtest.Option{Name: "action", Value: "enable"})
	m := in.wait(t, "/skill", func(m bus.Inbound) bool { return m.MessageID == "interaction:"+id })
	if m.Content != "/skill enable weather" {
		t.Errorf("Content = %q, want /skill enable weather", m.Content)
	}

	// The answer, as the agent sends it back (the inbound's metadata).
	answer := bus.Outbound{Channel: "discord", ChatID: m.ChatID, Kind: bus.KindMessage, Content: "Enabled **weather**.", ReplyTo: m.MessageID, Metadata: m.Metadata, Final: true}
	ref, err := ch.Send(t.Context(), answer)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	answer.Content = "A second part."
	ref2, err := ch.Send(t.Context(), answer)
	if err != nil {
		t.Fatalf("Send of a second part: %v", err)
	}
	if err := ch.Edit(t.Context(), ref, bus.Outbound{Content: "Enabled **weather** (edited)."}); err != nil {
		t.Fatalf("Edit: %v", err)
	}
	cb, _ := fake.Callback(id)
	var got []discordtest.Sent
	for _, s := range fake.Sent() {
		if s.Interaction == id {
			got = append(got, s)
		} else if s.ChannelID == general {
			t.Errorf("a channel message %+v: the answer belongs to the interaction", s)
		}
	}
	if len(got) != 3 || got[0].Content != "Enabled **weather**." || got[0].Edit || got[0].MessageID != ref.MessageID ||
		got[1].Content != "A second part." || got[1].MessageID != ref2.MessageID || got[1].MessageID == ref.MessageID ||
		!got[2].Edit || got[2].MessageID != ref.MessageID {
		t.Fatalf("interaction messages %+v, want the response, a follow-up, the response edited", got)
	}
	if cb.Seq > got[0].Seq {
		t.Errorf("the deferred response (seq %d) came after the answer (seq %d)", cb.Seq, got[0].Seq)
	}
}

// TestSlashAnswerFallsBackToTheChannel: when the interaction's token no
// longer works (expired, or unknown after a restart), the answer is
// posted in the channel.
func TestSlashAnswerFallsBackToTheChannel(t *testing.T) {
	fake, ch, id, m := aliceRanNew(t)
	fake.Expire(id)
	answer := bus.Outbound{Channel: "discord", ChatID: m.ChatID, Kind: bus.KindMessage, Content: "New conversation started.", ReplyTo: m.MessageID, Metadata: m.Metadata, Final: true}
	ref, err := ch.Send(t.Context(), answer)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	sent := fake.Sent()
	if len(sent) != 1 || sent[0].Interaction != "" || sent[0].ChannelID != dm(alice) || sent[0].Content != "New conversation started." || ref.MessageID != sent[0].MessageID {
		t.Fatalf("sent %+v, want the answer as a channel message", sent)
	}
	// Later parts go straight to the channel.
	answer.Content = "more"
	if _, err := ch.Send(t.Context(), answer); err != nil {
		t.Fatal(err)
	}
	if s := fake.Sent(); len(s) != 2 || s[1].Interaction != "" {
		t.Errorf("sent %+v", s)
	}
	// An answer to an interaction this process never saw (a restart).
	gone := answer
	gone.Metadata = bus.Metadata{metaInteraction: "123"}
	if _, err := ch.Send(t.Context(), gone); err != nil {
		t.Fatal(err)
	}
	if s := fake.Sent(); len(s) != 3 || s[2].Interaction != "" {
		t.Errorf("sent %+v", s)
	}
}

// TestSlashCommandFromAStranger: a sender the gate refuses is refused for
// a slash command as for typed text (nothing reaches the agent), and the
// deferred response is withdrawn instead of "thinking" for fifteen
// minutes.
func TestSlashCommandFromAStranger(t *testing.T) {
	fake := discordtest.New(t)
	in := &gate{deny: userID(toUser(mallory))}
	runWith(t, slashChannel(t, fake, table, nil), in)
	waitfor.True(t, "registration", func() bool { return fake.CommandPuts("") == 1 })
	fake.Send(discordtest.Msg{From: mallory, ChannelID: dm(mallory), Content: "/new"})
	id := fake.Invoke(dm(mallory), "", mallory, "new")
	waitfor.True(t, "the deferred response withdrawn", func() bool { return fake.Withdrawn(id) })
	in.mu.Lock()
	refused := append([]bus.Inbound(nil), in.refused...)
	in.mu.Unlock()
	if len(refused) != 2 || refused[0].SenderID != refused[1].SenderID || refused[0].Content != refused[1].Content {
		t.Errorf("refused %+v, want the typed and the slash /new alike", refused)
	}
	if got := in.received(); len(got) != 0 {
		t.Errorf("delivered %+v", got)
	}
}

func toUser(u discordtest.User) *discordgo.User {
	return &discordgo.User{ID: u.ID, Username: u.Username}
}

// TestSlashCommandInAChannelNotServed: in a channel outside allowChannels
// the command is refused at once, to the asker only, and not delivered.
func TestSlashCommandInAChannelNotServed(t *testing.T) {
	fake := discordtest.New(t)
	in := &gate{}
	runWith(t, slashChannel(t, fake, table, func(c *Config) { c.AllowChannels = []string{general} }), in)
	waitfor.True(t, "registration", func() bool { return fake.CommandPuts("") == 1 })
	id := fake.Invoke("7999", guild, alice, "new")
	served := fake.Invoke(general, guild, alice, "new")
	in.wait(t, "the command in the served channel", func(m bus.Inbound) bool { return m.MessageID == "interaction:"+served })
	cb, ok := fake.Callback(id)
	if !ok || cb.Type != 4 || cb.Flags != 64 || cb.Content == "" {
		t.Errorf("callback %+v %v, want an ephemeral refusal", cb, ok)
	}
	for _, m := range in.received() {
		if m.MessageID == "interaction:"+id {
			t.Error("a command from a channel not served was delivered")
		}
	}
}

// TestSlashCommandAckedWhileTheGatewayIsSlow: the deferred response does
// not wait for the commands queued before it: Discord's three seconds
// hold while the gateway takes its time.
func TestSlashCommandAckedWhileTheGatewayIsSlow(t *testing.T) {
	fake := discordtest.New(t)
	in := &gate{hold: make(chan struct{})}
	runWith(t, slashChannel(t, fake, table, nil), in)
	waitfor.True(t, "registration", func() bool { return fake.CommandPuts("") == 1 })
	first := fake.Invoke(dm(alice), "", alice, "new")
	second := fake.Invoke(dm(alice), "", alice, "skill")
	waitfor.Within(t, "both deferred while the first is held", 2*time.Second, func() bool { return fake.Answered(first) && fake.Answered(second) })
	if got := in.received(); len(got) != 0 {
		t.Fatalf("delivered %+v while held", got)
	}
	in.mu.Lock()
	close(in.hold)
	in.hold = nil
	in.mu.Unlock()
	in.wait(t, "the second command", func(m bus.Inbound) bool { return m.MessageID == "interaction:"+second })
}

// aliceRanNew runs a channel with the command table against a fake, waits
// for the registration and has alice run /new in a direct message: it
// returns the fake, the channel, the interaction's id and what the
// gateway received.
func aliceRanNew(t *testing.T) (*discordtest.Server, *Channel, string, bus.Inbound) {
	t.Helper()
	fake := discordtest.New(t)
	ch := slashChannel(t, fake, table, nil)
	in := &gate{}
	runWith(t, ch, in)
	waitfor.True(t, "registration", func() bool { return fake.CommandPuts("") == 1 })
	id := fake.Invoke(dm(alice), "", alice, "new")
	m := in.wait(t, "/new", func(m bus.Inbound) bool { return m.MessageID == "interaction:"+id })
	return fake, ch, id, m
}

func TestCommandGuildsChecked(t *testing.T) {
	c := DefaultConfig()
	c.Token, c.CommandGuilds = "t", []string{"123", "my server"}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "commandGuilds[1]") {
		t.Errorf("Validate = %v, want an error naming commandGuilds[1]", err)
	}
}

// A rate-limited answer is retried by the dispatcher, and its retry still
// completes the deferred response.
func TestSlashAnswerRateLimited(t *testing.T) {
	fake, ch, id, m := aliceRanNew(t)
	fake.RateLimit(1, time.Second)
	answer := bus.Outbound{Channel: "discord", ChatID: m.ChatID, Content: "done", Metadata: m.Metadata, Final: true}
	_, err := ch.Send(t.Context(), answer)
	var ra *channels.RetryAfterError
	if !errors.As(err, &ra) {
		t.Fatalf("Send = %v, want RetryAfterError", err)
	}
	if _, err := ch.Send(t.Context(), answer); err != nil {
		t.Fatal(err)
	}
	if s := fake.Sent(); len(s) != 1 || s[0].Interaction != id || s[0].Edit {
		t.Errorf("sent %+v, want the retry to complete the response", s)
	}
}

// TestSlashAnswerWithFiles: files answering a slash command go to the
// channel, and the deferred response nothing completed is withdrawn.
func TestSlashAnswerWithFiles(t *testing.T) {
	fake, ch, id, m := aliceRanNew(t)
	file := filepath.Join(t.TempDir(), "report.txt")
	if err := os.WriteFile(file, []byte("numbers"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := bus.Outbound{Channel: "discord", ChatID: m.ChatID, Content: "here", Metadata: m.Metadata, Media: []bus.Media{{Path: file}}, Final: true}
	if _, err := ch.SendMedia(t.Context(), out); err != nil {
		t.Fatal(err)
	}
	if s := fake.Sent(); len(s) != 1 || s[0].Interaction != "" || len(s[0].Files) != 1 {
		t.Errorf("sent %+v, want one channel message with the file", s)
	}
	if !fake.Withdrawn(id) {
		t.Error("the deferred response was left thinking")
	}
}

// TestButtonPressAckedWhileTheGatewayIsSlow: a press on an approval button
// is answered on arrival, not when the worker reaches it.
func TestButtonPressAckedWhileTheGatewayIsSlow(t *testing.T) {
	fake := discordtest.New(t)
	in := &gate{hold: make(chan struct{})}
	ch := slashChannel(t, fake, table, nil)
	runWith(t, ch, in)
	waitfor.True(t, "registration", func() bool { return fake.CommandPuts("") == 1 })
	ref, err := ch.Send(context.Background(), bus.Outbound{Channel: "discord", ChatID: dm(alice), Content: "Run ls?",
		Actions: []bus.Action{{Label: "Approve", Command: "/approve ab12"}}})
	if err != nil {
		t.Fatal(err)
	}
	first := fake.Invoke(dm(alice), "", alice, "new") // held by the gate
	press := fake.Press(dm(alice), "", ref.MessageID, alice, "Approve")
	waitfor.Within(t, "the press answered while the command before it is held", 2*time.Second, func() bool { return fake.Answered(first) && fake.Answered(press) })
	if got := in.received(); len(got) != 0 {
		t.Fatalf("delivered %+v while held", got)
	}
	in.mu.Lock()
	close(in.hold)
	in.hold = nil
	in.mu.Unlock()
}

func TestValidCommandName(t *testing.T) {
	for name, want := range map[string]bool{
		"new": true, "dream-log": true, "set_mode": true, "v2": true, "größe": true, "命令": false /* no case: Discord wants \p{Ll} */, "１２": true,
		"": false, "New": false, "two words": false, "slash/": false, strings.Repeat("a", 32): true, strings.Repeat("a", 33): false,
	} {
		if got := validName(name); got != want {
			t.Errorf("validName(%q) = %v, want %v", name, got, want)
		}
	}
}
