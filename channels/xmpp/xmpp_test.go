package xmpp

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/ping"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/xmpp/xmpptest"
	"github.com/nanobot-go/nanobot/gateway/relay"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

const (
	pw       = "s3cret-pw"
	testRoom = "lounge@" + xmpptest.MUC
)

// env is a running Prosody with the bot's, Alice's and Mallory's
// accounts, Alice in the testRoom, and the bot's connection through a proxy.
type env struct {
	srv      *xmpptest.Server
	proxy    *xmpptest.Proxy
	alice    *xmpptest.Client
	mallory  *xmpptest.Client
	botJID   string
	aliceJID string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := xmpptest.Start(t)
	for _, u := range []string{"bot", "alice", "mallory"} {
		srv.MustRegister(t, u, pw)
	}
	e := &env{srv: srv, proxy: xmpptest.NewProxy(t, srv.Addr), botJID: "bot@" + xmpptest.Domain, aliceJID: "alice@" + xmpptest.Domain}
	e.alice = srv.Dial(t, "alice", pw)
	e.mallory = srv.Dial(t, "mallory", pw)
	e.alice.Join(t, testRoom, "alice")
	return e
}

func (e *env) config() Config {
	c := DefaultConfig()
	c.JID, c.Password, c.Server, c.CAFile = e.botJID, pw, e.proxy.Addr, e.srv.CAFile
	c.Rooms = []Room{{JID: testRoom, Nick: "nanobot"}}
	return c
}

func newChannel(t *testing.T, cfg Config, log *slog.Logger) *Channel {
	t.Helper()
	ch, err := New(cfg, channels.Deps{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ch.backoffMin, ch.backoffMax = 50*time.Millisecond, 500*time.Millisecond
	ch.editInterval = 200 * time.Millisecond
	return ch
}

// sent maps what Alice received from the bot to the suite's view. It
// first waits until what the bot sent so far reached Alice: a ping round
// trip on the bot's stream (the server handled everything before it), then
// one on Alice's (she read everything the server sent her before it).
func (e *env) sent(ch *Channel) []channeltest.Sent {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if sess := ch.session(); sess != nil {
		_ = ping.Send(ctx, sess, jid.MustParse(xmpptest.Domain))
	}
	_ = e.alice.Sync(ctx)
	var out []channeltest.Sent
	for _, m := range e.alice.Messages() {
		if m.Body == "" {
			continue
		}
		chat := ""
		switch {
		case m.Type == "groupchat" && strings.HasPrefix(m.From, testRoom+"/nanobot"):
			chat = testRoom
		case m.Type == "chat" && strings.HasPrefix(m.From, e.botJID+"/"):
			chat = e.aliceJID
		default:
			continue
		}
		s := channeltest.Sent{ChatID: chat, MessageID: m.ID, Text: m.Body, At: m.At}
		if m.Replace != "" {
			s.Edit, s.MessageID = true, m.Replace
		}
		out = append(out, s)
	}
	return out
}

func TestConformance(t *testing.T) {
	channeltest.Run(t, channeltest.Harness{
		Timeout: 20 * time.Second,
		Setup: func(t *testing.T, cenv channeltest.Env) channeltest.Fixture {
			e := newEnv(t)
			ch := newChannel(t, e.config(), cenv.Log)
			return channeltest.Fixture{
				Channel: ch,
				SenderID: func(user string) string {
					return user + "@" + xmpptest.Domain
				},
				Emit: func(m channeltest.Message) channeltest.Emitted {
					from := e.alice
					if m.From == channeltest.Mallory {
						from = e.mallory
					}
					// The bot must have joined before a testRoom message
					// means anything to it.
					waitfor.Within(t, "the bot to connect", 20*time.Second, func() bool {
						return ch.Health().State == channels.StateConnected
					})
					if m.Group {
						id := from.Send(t, testRoom, "groupchat", "nanobot: "+m.Text, "")
						return channeltest.Emitted{ChatID: testRoom, MessageID: id}
					}
					id := from.Send(t, e.botJID, "chat", m.Text, "")
					return channeltest.Emitted{ChatID: from.JID.Bare().String(), MessageID: id}
				},
				// A delay stamp that is not a time: Prosody relays it,
				// the adapter cannot decode the stanza.
				EmitMalformed: func() {
					e.alice.Send(t, e.botJID, "chat", "the garbage itself", `<delay xmlns="urn:xmpp:delay" stamp="not a time"/>`)
				},
				// Without stream management (XEP-0198) a message the
				// server relays before it noticed the broken connection
				// is lost, so Drop returns once the bot is back.
				Drop: func() {
					before := ch.Health().Since
					e.proxy.Drop()
					waitfor.Within(t, "the bot to reconnect", 20*time.Second, func() bool {
						h := ch.Health()
						return h.State == channels.StateConnected && h.Since.After(before)
					})
				},
				Sent: func() []channeltest.Sent { return e.sent(ch) },
			}
		},
	})
}

// run starts ch and stops it when t ends.
func run(t *testing.T, ch *Channel, in channels.Inbox) <-chan error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		done <- ch.Run(ctx, in)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return")
		}
	})
	return done
}

// collect is an Inbox that records what it got.
type collect struct {
	mu   sync.Mutex
	msgs []bus.Inbound
}

func (c *collect) Deliver(_ context.Context, m bus.Inbound) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, m)
	return nil
}

func (c *collect) find(text string) (bus.Inbound, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.msgs {
		if strings.Contains(m.Content, text) {
			return m, true
		}
	}
	return bus.Inbound{}, false
}

func (c *collect) all() []bus.Inbound {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]bus.Inbound(nil), c.msgs...)
}

func waitConnected(t *testing.T, ch *Channel) {
	t.Helper()
	waitfor.Within(t, "the bot to connect", 20*time.Second, func() bool { return ch.Health().State == channels.StateConnected })
}

// TestRoomMentionPolicy: in a testRoom, a message naming the bot's nick is
// delivered (without the nick), one that does not is not, the bot's own
// message is not delivered back, and history from before the join is not
// replayed.
func TestRoomMentionPolicy(t *testing.T) {
	e := newEnv(t)
	e.alice.Send(t, testRoom, "groupchat", "nanobot: this was said before the bot joined", "")
	in := &collect{}
	ch := newChannel(t, e.config(), nil)
	run(t, ch, in)
	waitConnected(t, ch)

	e.alice.Send(t, testRoom, "groupchat", "just chatting among humans", "")
	if _, err := ch.Send(t.Context(), bus.Outbound{ChatID: testRoom, Content: "the bot speaks in the testRoom"}); err != nil {
		t.Fatal(err)
	}
	e.alice.Send(t, testRoom, "groupchat", "nanobot: what is the time?", "")
	waitfor.Within(t, "the mention", 20*time.Second, func() bool { _, ok := in.find("what is the time?"); return ok })
	// Alice saw the bot's message, so the testRoom relayed it (and its echo to
	// the bot) before the mention.
	waitfor.Within(t, "Alice to see the bot's testRoom message", 10*time.Second, func() bool {
		for _, m := range e.alice.Messages() {
			if m.Body == "the bot speaks in the testRoom" {
				return true
			}
		}
		return false
	})
	got := in.all()
	if len(got) != 1 {
		t.Fatalf("delivered %d messages, want only the mention: %+v", len(got), got)
	}
	m := got[0]
	if m.Content != "what is the time?" || !m.IsGroup || m.ChatID != testRoom || m.SenderID != e.aliceJID {
		t.Errorf("got %+v, want the mention without the nick from %s in %s", m, e.aliceJID, testRoom)
	}
}

// TestStreamingCorrections: a streamed reply through the real Dispatcher
// arrives as one message plus XEP-0308 corrections of it, the last showing
// the full text.
func TestStreamingCorrections(t *testing.T) {
	e := newEnv(t)
	in := &collect{}
	ch := newChannel(t, e.config(), nil)
	run(t, ch, in)
	waitConnected(t, ch)
	d := relay.NewDispatcher(relay.DispatcherConfig{MaxRetries: 3, RetryBase: 50 * time.Millisecond}, []channels.Channel{ch})
	out := make(chan bus.Outbound, 64)
	ctx, cancel := context.WithCancel(context.Background())
	dd := make(chan struct{})
	go func() { defer close(dd); _ = d.Run(ctx, out) }()
	t.Cleanup(func() { cancel(); <-dd })

	var full strings.Builder
	for i := range 10 {
		piece := "part" + string(rune('A'+i)) + " "
		full.WriteString(piece)
		out <- bus.Outbound{Channel: "xmpp", ChatID: e.aliceJID, Kind: bus.KindDelta, Content: piece, StreamID: "s"}
		time.Sleep(60 * time.Millisecond) // pace the deltas like a model does
	}
	out <- bus.Outbound{Channel: "xmpp", ChatID: e.aliceJID, Kind: bus.KindStreamEnd, Content: full.String(), StreamID: "s", Final: true}
	want := strings.TrimSpace(full.String())
	var msgs []xmpptest.Message
	waitfor.Within(t, "the full text", 20*time.Second, func() bool {
		msgs = nil
		for _, m := range e.alice.Messages() {
			if m.Body != "" {
				msgs = append(msgs, m)
			}
		}
		return len(msgs) > 0 && strings.TrimSpace(msgs[len(msgs)-1].Body) == want
	})
	if len(msgs) < 2 {
		t.Fatalf("got %d messages, want a message and corrections", len(msgs))
	}
	if msgs[0].Replace != "" {
		t.Errorf("the first message is a correction of %s", msgs[0].Replace)
	}
	for _, m := range msgs[1:] {
		if m.Replace != msgs[0].ID {
			t.Errorf("message %q replaces %q, want a correction of the first message %q", m.Body, m.Replace, msgs[0].ID)
		}
	}
	t.Logf("stream of %d deltas: 1 message + %d corrections", 10, len(msgs)-1)
}

// TestTypingChatState: Typing reaches the peer as a composing chat state.
func TestTypingChatState(t *testing.T) {
	e := newEnv(t)
	ch := newChannel(t, e.config(), nil)
	run(t, ch, &collect{})
	waitConnected(t, ch)
	if err := ch.Typing(t.Context(), e.aliceJID, nil); err != nil {
		t.Fatal(err)
	}
	waitfor.Within(t, "composing", 10*time.Second, func() bool {
		for _, m := range e.alice.Messages() {
			if m.Composing {
				return true
			}
		}
		return false
	})
}

// TestServerRestart: after Prosody restarts, the bot reconnects by itself,
// rejoins, and answers again.
func TestServerRestart(t *testing.T) {
	e := newEnv(t)
	in := &collect{}
	ch := newChannel(t, e.config(), nil)
	run(t, ch, in)
	waitConnected(t, ch)
	e.alice.Send(t, e.botJID, "chat", "before the restart", "")
	waitfor.Within(t, "the first message", 20*time.Second, func() bool { _, ok := in.find("before the restart"); return ok })

	if err := e.srv.Restart(); err != nil {
		t.Fatal(err)
	}
	waitfor.Within(t, "the bot to notice", 20*time.Second, func() bool { return ch.Health().State != channels.StateConnected })
	waitConnected(t, ch)
	alice := e.srv.Dial(t, "alice", pw)
	alice.Send(t, e.botJID, "chat", "after the restart", "")
	waitfor.Within(t, "a message after the restart", 20*time.Second, func() bool { _, ok := in.find("after the restart"); return ok })
	if _, err := ch.Send(t.Context(), bus.Outbound{ChatID: e.aliceJID, Content: "still here"}); err != nil {
		t.Fatal(err)
	}
	waitfor.Within(t, "the answer after the restart", 10*time.Second, func() bool {
		for _, m := range alice.Messages() {
			if m.Body == "still here" {
				return true
			}
		}
		return false
	})
	if h := ch.Health(); h.State != channels.StateConnected {
		t.Errorf("health %+v, want connected", h)
	}
}

// TestWrongPassword: a login the server rejects stops Run with a
// FatalError that says so, without the password.
func TestWrongPassword(t *testing.T) {
	e := newEnv(t)
	cfg := e.config()
	cfg.Password = "not-the-password"
	ch := newChannel(t, cfg, nil)
	done := run(t, ch, &collect{})
	select {
	case err := <-done:
		if !channels.IsFatal(err) || !errors.Is(err, ErrUnauthorized) {
			t.Fatalf("Run = %v, want a fatal ErrUnauthorized", err)
		}
		if strings.Contains(err.Error(), cfg.Password) {
			t.Errorf("error %q contains the password", err)
		}
		if h := ch.Health(); h.State != channels.StateFailed {
			t.Errorf("health %+v, want failed", h)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("Run did not stop on a rejected login; health %+v", ch.Health())
	}
}

// TestUntrustedCertificate: without caFile the self-signed server is not
// trusted, and the error says what to do; with tlsInsecureSkipVerify it is.
func TestUntrustedCertificate(t *testing.T) {
	e := newEnv(t)
	cfg := e.config()
	cfg.CAFile = ""
	ch := newChannel(t, cfg, nil)
	run(t, ch, &collect{})
	waitfor.Within(t, "a certificate error", 20*time.Second, func() bool {
		return strings.Contains(ch.Health().LastError, "caFile")
	})

	cfg.TLSInsecureSkipVerify = true
	ch2 := newChannel(t, cfg, nil)
	run(t, ch2, &collect{})
	waitConnected(t, ch2)
}

// TestDirectTLS: the bot connects over direct TLS (XEP-0368).
func TestDirectTLS(t *testing.T) {
	e := newEnv(t)
	cfg := e.config()
	cfg.Server, cfg.DirectTLS = e.srv.TLSAddr, true
	in := &collect{}
	ch := newChannel(t, cfg, nil)
	run(t, ch, in)
	waitConnected(t, ch)
	e.alice.Send(t, e.botJID, "chat", "over direct tls", "")
	waitfor.Within(t, "the message", 20*time.Second, func() bool { _, ok := in.find("over direct tls"); return ok })
}

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	ok.JID, ok.Password = "bot@example.org", "pw"
	tests := []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"ok", func(*Config) {}, ""},
		{"no jid", func(c *Config) { c.JID = "" }, "jid:"},
		{"domain only", func(c *Config) { c.JID = "example.org" }, "jid:"},
		{"no password", func(c *Config) { c.Password = "" }, "password: required"},
		{"bad server", func(c *Config) { c.Server = "example.org" }, "server:"},
		{"missing ca", func(c *Config) { c.CAFile = "/nonexistent/ca.pem" }, "caFile:"},
		{"testRoom with nick in jid", func(c *Config) { c.Rooms = []Room{{JID: "r@muc.example.org/nick"}} }, "rooms[0].jid"},
		{"testRoom twice", func(c *Config) { c.Rooms = []Room{{JID: "r@muc.example.org"}, {JID: "r@muc.example.org"}} }, "rooms[1].jid"},
		{"bad policy", func(c *Config) { c.GroupPolicy = "loud" }, "groupPolicy"},
		{"allowlist without rooms", func(c *Config) { c.GroupPolicy = channels.GroupAllowlist }, "groupAllowFrom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

func TestMentions(t *testing.T) {
	tests := []struct {
		text      string
		addressed bool
		stripped  string
	}{
		{"nanobot: hi", true, "hi"},
		{"@nanobot hi", true, "hi"},
		{"hey NanoBot, how are you", true, "hey NanoBot, how are you"},
		{"nanobots are small", false, "nanobots are small"},
		{"ask the bot", false, "ask the bot"},
	}
	for _, tc := range tests {
		if got := mentions(tc.text, "nanobot"); got != tc.addressed {
			t.Errorf("mentions(%q) = %v, want %v", tc.text, got, tc.addressed)
		}
		if got := stripMention(tc.text, "nanobot"); got != tc.stripped {
			t.Errorf("stripMention(%q) = %q, want %q", tc.text, got, tc.stripped)
		}
	}
}
