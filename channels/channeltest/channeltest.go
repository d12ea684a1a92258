// Package channeltest is the conformance suite every channel adapter runs
// against a local fake of its platform. The adapter's test describes how to
// drive its fake with a Harness; Run then checks, one subtest each, what
// every adapter must do whatever the platform:
//
//   - an inbound text becomes a bus.Inbound with the sender, chat and
//     message ids the platform used, in direct chats and in groups;
//   - a sender the Inbox denies is acknowledged and the adapter keeps going;
//   - a message is acknowledged to the platform only after Deliver returned;
//   - a reply is sent, and a reply over the platform's limit, run through
//     the real relay.Dispatcher, arrives split with code blocks intact;
//   - streamed deltas become edits no faster than EditInterval (Editors),
//     drafts no faster than that and then one message with the whole text
//     (Drafters, in chats they draft), or one message (the others);
//   - a dropped connection is survived, a malformed payload is logged and
//     skipped;
//   - Run returns promptly when its context ends and leaves no goroutine.
//
// Usage, in the adapter's package test:
//
//	func TestConformance(t *testing.T) {
//		channeltest.Run(t, channeltest.Harness{
//			Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
//				fake := startFake(t) // registers t.Cleanup
//				ch := mustNew(t, fake.URL, env.Log, env.MediaDir)
//				return channeltest.Fixture{Channel: ch, Emit: fake.emit, ...}
//			},
//		})
//	}
//
// Setup is called once per check, so every check gets a fresh fake and a
// fresh channel. The checks run one after another (never in parallel: the
// goroutine-leak check looks at the whole process). The suite waits by
// polling with deadlines, never by sleeping for a fixed time.
package channeltest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels"
)

// Test users the suite emits messages from. The adapter's fake maps them to
// platform users of its own choosing (ids, usernames).
const (
	// Alice is allowed by the suite's Inbox.
	Alice = "alice"
	// Mallory is denied by the suite's Inbox.
	Mallory = "mallory"
)

// Harness tells the suite how to set up an adapter against its fake.
type Harness struct {
	// Setup starts a fresh platform fake and builds the channel pointed at
	// it, with env.Log as its logger. It registers its own cleanup with
	// t.Cleanup. The suite calls Run on the channel itself.
	Setup func(t *testing.T, env Env) Fixture
	// Timeout bounds each wait for the adapter (10 s when zero).
	Timeout time.Duration
	// Skip names checks to leave out ("drop_connection", ...), with the
	// reason in the value; the suite reports them as skipped.
	Skip map[string]string
}

// Env is what the suite gives Setup.
type Env struct {
	// Log records what the adapter logs; the malformed-payload check looks
	// for a warning in it.
	Log *slog.Logger
	// MediaDir is an empty folder for downloaded attachments.
	MediaDir string
	// StateDir is an empty folder for runtime state.
	StateDir string
}

// Fixture is one adapter wired to one fake.
type Fixture struct {
	// Channel is the adapter under test (not running yet).
	Channel channels.Channel
	// SenderID returns the Inbound.SenderID the adapter reports for a
	// test user (Alice, Mallory).
	SenderID func(user string) string
	// Emit makes the platform deliver a text message and returns the ids
	// the adapter should report for it. It must not block on the adapter.
	Emit func(m Message) Emitted
	// EmitMalformed makes the platform deliver a payload the adapter
	// cannot decode (bad JSON, wrong field types). Nil skips the check.
	EmitMalformed func()
	// Drop makes the platform drop the adapter's connection (close the
	// socket, fail the next requests for a moment). Nil skips the check.
	Drop func()
	// Sent returns everything the platform received, sends and edits, in
	// the order received.
	Sent func() []Sent
	// Acked reports whether the platform considers an emitted message
	// acknowledged (delivery confirmed). Nil skips the ack assertions.
	Acked func(e Emitted) bool
	// Drafts returns the drafts the platform showed in a chat, in order,
	// for a channels.Drafter (Text and At set). Nil skips the draft
	// assertions (the stream must still end as one message).
	Drafts func(chatID string) []Sent
}

// Message is a text message the fake should make the platform deliver.
type Message struct {
	// From is a test user (Alice, Mallory).
	From string
	// Group puts the message in a group chat, written so that the adapter's
	// default group policy accepts it (it mentions the bot). Otherwise it
	// is a direct chat with the bot.
	Group bool
	// Text is the message text.
	Text string
}

// Emitted are the ids the adapter should report for an emitted message.
type Emitted struct {
	ChatID    string
	MessageID string
}

// Sent is one message as the platform received it from the adapter.
type Sent struct {
	ChatID    string
	MessageID string
	// Edit is true for an edit of the message MessageID, false for a new
	// message.
	Edit bool
	// Text is what the user sees, with code blocks written as Markdown
	// fences (```lang ... ```) so the suite can check they stayed intact;
	// other formatting may be stripped.
	Text string
	// At is when the platform received it.
	At time.Time
}

// Run runs every check against the harness, each in its own subtest.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.Setup == nil {
		t.Fatal("channeltest: Harness.Setup is nil")
	}
	if h.Timeout <= 0 {
		h.Timeout = 10 * time.Second
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if why, ok := h.Skip[c.name]; ok {
				t.Skip(why)
			}
			c.run(t, &suite{h: h})
		})
	}
}

// Check names, for Harness.Skip.
const (
	CheckInboundDirect  = "inbound_direct"
	CheckInboundGroup   = "inbound_group"
	CheckDeniedSender   = "denied_sender"
	CheckAckAfter       = "ack_after_delivery"
	CheckReply          = "reply"
	CheckLongReplySplit = "long_reply_split"
	CheckStreaming      = "streaming"
	CheckDropConnection = "drop_connection"
	CheckMalformed      = "malformed_payload"
	CheckShutdown       = "shutdown_no_leak"
)

var checks = []struct {
	name string
	run  func(t *testing.T, s *suite)
}{
	{CheckInboundDirect, checkInboundDirect},
	{CheckInboundGroup, checkInboundGroup},
	{CheckDeniedSender, checkDeniedSender},
	{CheckAckAfter, checkAckAfterDelivery},
	{CheckReply, checkReply},
	{CheckLongReplySplit, checkLongReplySplit},
	{CheckStreaming, checkStreaming},
	{CheckDropConnection, checkDropConnection},
	{CheckMalformed, checkMalformed},
	{CheckShutdown, checkShutdown},
}

// suite is the state of one check.
type suite struct {
	h     Harness
	fx    Fixture
	logs  *recorder
	inbox *inbox
	run   *running
}

// setup builds the fixture and starts the channel.
func (s *suite) setup(t *testing.T) {
	t.Helper()
	s.logs = &recorder{}
	env := Env{Log: slog.New(s.logs), MediaDir: t.TempDir(), StateDir: t.TempDir()}
	s.fx = s.h.Setup(t, env)
	if s.fx.Channel == nil || s.fx.Emit == nil || s.fx.Sent == nil || s.fx.SenderID == nil {
		t.Fatal("channeltest: Fixture needs Channel, SenderID, Emit and Sent")
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("adapter log:\n%s", s.logs.dump())
		}
	})
	s.inbox = newInbox(s.fx.SenderID(Mallory))
}

// start runs the channel until the check ends.
func (s *suite) start(t *testing.T) {
	t.Helper()
	s.run = start(t, s.fx.Channel, s.inbox)
}

func (s *suite) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), s.h.Timeout)
	t.Cleanup(cancel)
	return ctx
}

// running is a channel's Run in its goroutine.
type running struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

func start(t *testing.T, ch channels.Channel, in channels.Inbox) *running {
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = ch.Run(ctx, in)
	}()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop cancels Run and waits for it to return, at most 5 s.
func (r *running) stop(t *testing.T) time.Duration {
	t.Helper()
	began := time.Now()
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		t.Fatalf("Run did not return within 5 s of its context ending")
	}
	if r.err != nil {
		t.Errorf("Run returned %v after its context ended, want nil", r.err)
	}
	return time.Since(began)
}

// alive fails the test when Run has returned.
func (r *running) alive(t *testing.T) {
	t.Helper()
	select {
	case <-r.done:
		t.Fatalf("Run returned early: %v", r.err)
	default:
	}
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
