package irc

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/irc/irctest"
	"github.com/nanobot-go/nanobot/gateway/relay"
)

const (
	botNick = "nanobot"
	room    = "#nanobot"
)

// newChannel builds a channel against srv's plain port with short timings.
func newChannel(t *testing.T, port int, log *slog.Logger, edit func(*Config)) *Channel {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Enabled, cfg.AllowFrom = true, []string{"*"}
	cfg.Server, cfg.Port, cfg.TLS = "127.0.0.1", port, false
	cfg.Nick = botNick
	cfg.Channels = []ChannelConfig{{Name: room}}
	cfg.FloodIntervalMs = 20
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
	ch.backoffMin, ch.backoffMax = 20*time.Millisecond, 200*time.Millisecond
	ch.regain = 200 * time.Millisecond
	return ch
}

// emitter sends users' messages to the bot in order, each once the bot is
// on the server (joined to the room, as its watcher sees it): IRC drops a
// message to a nick or channel the bot is not in.
type emitter struct {
	watch *irctest.Client // in the room; sees the bot join and quit
	bot   string
	queue chan func()
	done  chan struct{}
}

func newEmitter(t *testing.T, watch *irctest.Client, bot string) *emitter {
	e := &emitter{watch: watch, bot: bot, queue: make(chan func(), 64), done: make(chan struct{})}
	go func() {
		defer close(e.done)
		for f := range e.queue {
			f()
		}
	}()
	t.Cleanup(func() {
		close(e.queue)
		<-e.done
	})
	return e
}

// botPresent reports whether the last JOIN or QUIT of the bot the watcher
// saw is a JOIN.
func (e *emitter) botPresent() bool {
	present := false
	for _, l := range e.watch.Lines() {
		if l.Msg.Command == "353" && len(l.Msg.Params) == 4 { // NAMES: the bot was there before the watcher
			for _, n := range strings.Fields(l.Msg.Params[3]) {
				if strings.EqualFold(strings.TrimLeft(n, "@+%~&"), e.bot) {
					present = true
				}
			}
			continue
		}
		if !strings.EqualFold(l.Msg.Nick(), e.bot) {
			continue
		}
		switch l.Msg.Command {
		case "JOIN":
			present = true
		case "QUIT":
			present = false
		}
	}
	return present
}

func (e *emitter) send(from *irctest.Client, target, text string) {
	e.queue <- func() {
		deadline := time.Now().Add(20 * time.Second)
		for !e.botPresent() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		from.Privmsg(target, text)
	}
}

// waitGone waits until the watcher saw the bot quit (after a KILL).
func (e *emitter) waitGone(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for e.botPresent() {
		if time.Now().After(deadline) {
			t.Fatal("the bot did not leave the server")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestConformance runs the shared suite against a real ngIRCd: alice and
// mallory are IRC clients in the room, the bot's lines are what they
// receive, and a dropped connection is an operator's KILL.
func TestConformance(t *testing.T) {
	channeltest.Run(t, channeltest.Harness{
		Skip: map[string]string{
			channeltest.CheckLongReplySplit: "IRC has no multi-line messages: every line arrives as a message of its own, so a code block cannot stay inside one; TestLongReplyReassembled checks that the lines give back the exact text",
		},
		Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
			srv := irctest.Start(t, irctest.Options{})
			alice := irctest.Dial(t, srv.Addr(), "alice")
			mallory := irctest.Dial(t, srv.Addr(), "mallory")
			alice.Join(room)
			mallory.Join(room)
			ch := newChannel(t, srv.Port, env.Log, nil)
			em := newEmitter(t, alice, botNick)
			users := map[string]*irctest.Client{channeltest.Alice: alice, channeltest.Mallory: mallory}
			var operOnce sync.Once
			return channeltest.Fixture{
				Channel: ch,
				SenderID: func(user string) string {
					n := users[user].Nick
					return n + "|" + n + "!~" + n + "@127.0.0.1" // ngIRCd marks a user name without ident with ~
				},
				Emit: func(m channeltest.Message) channeltest.Emitted {
					u := users[m.From]
					if m.Group {
						em.send(u, room, botNick+": "+m.Text)
						return channeltest.Emitted{ChatID: room}
					}
					em.send(u, botNick, m.Text)
					return channeltest.Emitted{ChatID: u.Nick}
				},
				EmitMalformed: func() { em.send(alice, botNick, "\xff\xfe not utf-8 \xc3") },
				Drop: func() {
					operOnce.Do(alice.Oper)
					alice.Send("KILL " + botNick + " :conformance drop")
					em.waitGone(t)
				},
				Sent: func() []channeltest.Sent {
					// Everything the bot wrote reaches alice or mallory once:
					// wait for it, so that a check looking right after Send
					// sees the line.
					deadline := time.Now().Add(10 * time.Second)
					for time.Now().Before(deadline) && int64(len(alice.PrivmsgsFrom(0, botNick, room))+len(alice.PrivmsgsFrom(0, botNick, alice.Nick))+len(mallory.PrivmsgsFrom(0, botNick, mallory.Nick))) < ch.written.Load() {
						time.Sleep(5 * time.Millisecond)
					}
					var out []channeltest.Sent
					add := func(c *irctest.Client, target string) {
						for _, l := range c.PrivmsgsFrom(0, botNick, target) {
							text := l.Msg.Params[1]
							out = append(out, channeltest.Sent{ChatID: l.Msg.Params[0], MessageID: LineID(l.Msg.Params[0], text), Text: text, At: l.At})
						}
					}
					add(alice, room)
					add(alice, alice.Nick)
					add(mallory, mallory.Nick)
					return out
				},
			}
		},
	})
}

// inbox records deliveries; deny names senders it refuses.
type inbox struct {
	mu   sync.Mutex
	got  []bus.Inbound
	deny func(sender string) bool
}

func (in *inbox) Deliver(_ context.Context, m bus.Inbound) error {
	if in.deny != nil && in.deny(m.SenderID) {
		return channels.ErrDenied
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.got = append(in.got, m)
	return nil
}

func (in *inbox) all() []bus.Inbound {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]bus.Inbound(nil), in.got...)
}

// wait waits for a delivery whose content is text.
func (in *inbox) wait(t *testing.T, text string) bus.Inbound {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, m := range in.all() {
			if m.Content == text {
				return m
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for an inbound %q; got %+v", text, in.all())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// run runs ch until the test ends and returns Run's result channel.
func run(t *testing.T, ch channels.Channel, in channels.Inbox) <-chan error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	res, done := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(done)
		res <- ch.Run(ctx, in)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return within 10 s of cancel")
		}
	})
	return res
}

func waitHealth(t *testing.T, ch *Channel, want channels.State) channels.Health {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		h := ch.Health()
		if h.State == want {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("health %+v, want state %s", h, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestMentionPolicy: in a room under the default mention policy only
// lines that name the bot reach the gateway, with "nick:" stripped.
func TestMentionPolicy(t *testing.T) {
	srv := irctest.Start(t, irctest.Options{})
	alice := irctest.Dial(t, srv.Addr(), "alice")
	alice.Join(room)
	ch := newChannel(t, srv.Port, nil, nil)
	in := &inbox{}
	run(t, ch, in)
	em := newEmitter(t, alice, botNick)
	for _, text := range []string{
		"good morning everyone",
		"nanobotty is not the bot",
		"nanobot: what time is it?",
		"NanoBot, how are you",
		"I think nanobot knows",
		"@nanobot: last one",
	} {
		em.send(alice, room, text)
	}
	in.wait(t, "last one")
	var got []string
	for _, m := range in.all() {
		if m.ChatID != room || !m.IsGroup {
			t.Errorf("inbound %+v: want chat %s, group", m, room)
		}
		got = append(got, m.Content)
	}
	want := []string{"what time is it?", "how are you", "I think nanobot knows", "last one"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("delivered %q, want %q", got, want)
	}
}

// TestStrangerGetsPairingCode: a private message from a sender not on
// allowFrom goes through the real Gate: the stranger is sent a pairing
// code over IRC and nothing reaches the agent.
func TestStrangerGetsPairingCode(t *testing.T) {
	srv := irctest.Start(t, irctest.Options{})
	alice := irctest.Dial(t, srv.Addr(), "alice")
	alice.Join(room)
	stranger := irctest.Dial(t, srv.Addr(), "stranger")
	ch := newChannel(t, srv.Port, nil, func(c *Config) { c.AllowFrom = []string{"alice"} })
	next := &inbox{}
	gate := &relay.Gate{
		AllowFrom: map[string][]string{"irc": {"alice"}},
		Pairing:   relay.NewPairingStore(t.TempDir() + "/pairing.json"),
		Next:      next,
		Reply: func(ctx context.Context, m bus.Outbound) error {
			_, err := ch.Send(ctx, m)
			return err
		},
	}
	run(t, ch, gate)
	em := newEmitter(t, alice, botNick)
	em.send(stranger, botNick, "let me in")
	code := stranger.Wait("a pairing code", func(l irctest.Line) bool {
		return l.Msg.Command == "PRIVMSG" && l.Msg.Nick() == botNick && strings.Contains(l.Msg.Params[1], "pairing")
	})
	em.send(alice, botNick, "allowed one")
	next.wait(t, "allowed one")
	for _, m := range next.all() {
		if strings.Contains(m.Content, "let me in") {
			t.Errorf("the stranger's message reached the agent: %+v", m)
		}
	}
	t.Logf("stranger was told: %q", code.Msg.Params[1])
}

// TestLongReplyReassembled: a long reply with multi-byte text, long words
// and line breaks arrives as lines that each fit the 512-byte limit as the
// server relays them (prefix included), are valid UTF-8, and put together
// give the exact text back.
func TestLongReplyReassembled(t *testing.T) {
	srv := irctest.Start(t, irctest.Options{})
	alice := irctest.Dial(t, srv.Addr(), "alice")
	alice.Join(room)
	ch := newChannel(t, srv.Port, nil, nil)
	in := &inbox{}
	run(t, ch, in)
	newEmitter(t, alice, botNick).send(alice, botNick, "write a lot")
	in.wait(t, "write a lot")

	var b strings.Builder
	for i := range 30 {
		b.WriteString("Grüße, 世界! Zeile " + strings.Repeat("ü", i) + " and some more words to fill the line. ")
	}
	b.WriteString("\n\nsecond paragraph: " + strings.Repeat("🙂", 300) + "\n" + strings.Repeat("x", 1200) + "\nend")
	text := b.String()
	mark := alice.Len()
	if _, err := ch.Send(t.Context(), bus.Outbound{Channel: "irc", ChatID: "alice", Content: text, Final: true}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	alice.WaitFrom(mark, 20*time.Second, "the last line", func(l irctest.Line) bool {
		return l.Msg.Command == "PRIVMSG" && len(l.Msg.Params) == 2 && strings.HasSuffix(l.Msg.Params[1], "end")
	})
	lines := alice.PrivmsgsFrom(mark, botNick, "alice")
	var got strings.Builder
	for i, l := range lines {
		if n := len(l.Raw) + 2; n > 512 {
			t.Errorf("line %d is %d bytes as relayed, over 512: %q", i, n, l.Raw[:60])
		}
		if !utf8Valid(l.Msg.Params[1]) {
			t.Errorf("line %d is not valid UTF-8", i)
		}
		got.WriteString(l.Msg.Params[1])
	}
	// Servers drop a line's trailing spaces, and so does Send.
	var want strings.Builder
	for line := range strings.SplitSeq(text, "\n") {
		want.WriteString(strings.TrimRight(line, " "))
	}
	if got.String() != want.String() {
		t.Errorf("reassembled %d bytes, want %d bytes of the exact text", got.Len(), want.Len())
	}
	if len(lines) < 10 {
		t.Errorf("%d lines, want the text cut into many", len(lines))
	}
	t.Logf("%d bytes of text in %d lines, longest relayed line %d bytes", want.Len(), len(lines), longest(lines))
}

func longest(lines []irctest.Line) int {
	n := 0
	for _, l := range lines {
		n = max(n, len(l.Raw)+2)
	}
	return n
}

// TestNickCollision: another client holds the bot's nick, so the bot
// connects as nanobot_ and answers there; once the holder leaves, the bot
// takes its own nick back.
func TestNickCollision(t *testing.T) {
	srv := irctest.Start(t, irctest.Options{})
	alice := irctest.Dial(t, srv.Addr(), "alice")
	alice.Join(room)
	holder := irctest.Dial(t, srv.Addr(), botNick)
	ch := newChannel(t, srv.Port, nil, nil)
	in := &inbox{}
	run(t, ch, in)
	alice.Wait("the bot joining as nanobot_", func(l irctest.Line) bool {
		return l.Msg.Command == "JOIN" && l.Msg.Nick() == "nanobot_"
	})
	alice.Privmsg("nanobot_", "are you there?")
	m := in.wait(t, "are you there?")
	if _, err := ch.Send(t.Context(), bus.Outbound{Channel: "irc", ChatID: m.ChatID, Content: "yes", Final: true}); err != nil {
		t.Fatal(err)
	}
	alice.Wait("the answer from nanobot_", func(l irctest.Line) bool {
		return l.Msg.Command == "PRIVMSG" && l.Msg.Nick() == "nanobot_" && l.Msg.Params[1] == "yes"
	})
	holder.Close()
	alice.Wait("the bot taking its nick back", func(l irctest.Line) bool {
		return l.Msg.Command == "NICK" && l.Msg.Nick() == "nanobot_" && l.Msg.Params[0] == botNick
	})
}

// TestServerRestart: the server goes away and comes back; the bot
// reconnects by itself (health reconnecting, then connected) and answers
// again.
func TestServerRestart(t *testing.T) {
	srv := irctest.Start(t, irctest.Options{})
	ch := newChannel(t, srv.Port, nil, nil)
	in := &inbox{}
	run(t, ch, in)
	waitHealth(t, ch, channels.StateConnected)
	alice := irctest.Dial(t, srv.Addr(), "alice")
	alice.Join(room)
	newEmitter(t, alice, botNick).send(alice, botNick, "before the restart")
	in.wait(t, "before the restart")

	srv.Stop()
	h := waitHealth(t, ch, channels.StateReconnecting)
	t.Logf("while the server is down: %+v", h)
	if _, err := ch.Send(t.Context(), bus.Outbound{Channel: "irc", ChatID: "alice", Content: "lost"}); !errors.Is(err, errNotConnected) {
		t.Errorf("Send while disconnected: %v, want errNotConnected", err)
	}
	srv.Restart()
	waitHealth(t, ch, channels.StateConnected)
	alice2 := irctest.Dial(t, srv.Addr(), "alice")
	alice2.Join(room)
	newEmitter(t, alice2, botNick).send(alice2, botNick, "after the restart")
	m := in.wait(t, "after the restart")
	if _, err := ch.Send(t.Context(), bus.Outbound{Channel: "irc", ChatID: m.ChatID, Content: "back again", Final: true}); err != nil {
		t.Fatal(err)
	}
	alice2.Wait("the answer after the restart", func(l irctest.Line) bool {
		return l.Msg.Command == "PRIVMSG" && l.Msg.Nick() == botNick && l.Msg.Params[1] == "back again"
	})
}

func utf8Valid(s string) bool { return utf8.ValidString(s) }

// TestFloodControl (ngIRCd): with burst 4 and 300 ms per line, ten lines
// arrive with the last six at least 300 ms apart on average.
func TestFloodControl(t *testing.T) {
	srv := irctest.Start(t, irctest.Options{})
	alice := irctest.Dial(t, srv.Addr(), "alice")
	alice.Join(room)
	ch := newChannel(t, srv.Port, nil, func(c *Config) { c.FloodBurst, c.FloodIntervalMs = 4, 300 })
	run(t, ch, &inbox{})
	alice.Wait("the bot joining", func(l irctest.Line) bool { return l.Msg.Command == "JOIN" && l.Msg.Nick() == botNick })
	time.Sleep(300 * time.Millisecond) // let the bucket refill after the JOIN took a token
	var text []string
	for i := range 10 {
		text = append(text, "line "+strconv.Itoa(i))
	}
	mark := alice.Len()
	began := time.Now()
	if _, err := ch.Send(t.Context(), bus.Outbound{Channel: "irc", ChatID: "alice", Content: strings.Join(text, "\n"), Final: true}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	alice.WaitFrom(mark, 10*time.Second, "line 9", func(l irctest.Line) bool { return l.Msg.Command == "PRIVMSG" && l.Msg.Params[1] == "line 9" })
	lines := alice.PrivmsgsFrom(mark, botNick, "alice")
	if len(lines) != 10 {
		t.Fatalf("%d lines arrived, want 10", len(lines))
	}
	if min := 6 * 300 * time.Millisecond; took < min-50*time.Millisecond {
		t.Errorf("10 lines sent in %s, want at least %s (burst 4, then 300 ms each)", took, min)
	}
	t.Logf("10 lines: Send took %s; first 4 arrived within %s, last 6 over %s", took.Round(time.Millisecond),
		lines[3].At.Sub(lines[0].At).Round(time.Millisecond), lines[9].At.Sub(lines[3].At).Round(time.Millisecond))
}
