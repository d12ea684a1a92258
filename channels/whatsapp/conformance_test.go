package whatsapp

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"
	"google.golang.org/protobuf/proto"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/configs"
)

var malloryPN = types.NewJID("491709999999", types.DefaultUserServer)

// suiteClient is the fake client as the conformance suite drives it:
// events reach the adapter on one goroutine, in order, as whatsmeow
// delivers them, so Emit never blocks on the adapter; sends are recorded
// with their ids and times.
type suiteClient struct {
	*fakeClient
	events chan any
	ready  chan struct{} // closed by the first Connect
	once   sync.Once

	mu   sync.Mutex
	out  []channeltest.Sent
	next int
}

func newSuiteClient(t *testing.T) *suiteClient {
	s := &suiteClient{fakeClient: newFake(), events: make(chan any, 64), ready: make(chan struct{})}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		// Like WhatsApp's server, hold messages until the client connected.
		select {
		case <-s.ready:
		case <-stop:
			return
		}
		for {
			select {
			case e := <-s.events:
				s.emit(e)
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return s
}

// Connect succeeds and reports the connection as whatsmeow does: with an
// event, after the fact.
func (s *suiteClient) Connect() error {
	s.events <- &events.Connected{}
	s.once.Do(func() { close(s.ready) })
	return nil
}

func (s *suiteClient) SendMessage(_ context.Context, to types.JID, msg *waE2E.Message, _ ...whatsmeow.SendRequestExtra) (whatsmeow.SendResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	id := types.MessageID(fmt.Sprintf("3EB0%04d", s.next))
	s.out = append(s.out, channeltest.Sent{ChatID: to.String(), MessageID: id, Text: asMarkdown(msg.GetConversation()), At: time.Now()})
	return whatsmeow.SendResponse{ID: id}, nil
}

// WhatsApp's code blocks have no language line: "```code```" shows as
// monospace. The suite reads fences as Markdown writes them.
var fenceWithText = regexp.MustCompile("(?m)^```([^`\n]+)$")

func asMarkdown(s string) string { return fenceWithText.ReplaceAllString(s, "```\n$1") }

func TestConformance(t *testing.T) {
	channeltest.Run(t, channeltest.Harness{
		Skip: map[string]string{
			channeltest.CheckMalformed: "whatsmeow decodes and decrypts the wire itself; the adapter only ever sees typed events",
		},
		Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
			fake := newSuiteClient(t)
			cfg := DefaultConfig()
			cfg.Enabled = true
			ch, err := New(cfg, channels.Deps{Log: env.Log, Paths: configs.Paths{Media: env.MediaDir, State: env.StateDir}})
			if err != nil {
				t.Fatal(err)
			}
			ch.open = func(context.Context) (client, func(), error) { return fake, func() {}, nil }
			jid := map[string]types.JID{channeltest.Alice: alicePN, channeltest.Mallory: malloryPN}
			var mu sync.Mutex
			n := 0
			return channeltest.Fixture{
				Channel: ch,
				SenderID: func(user string) string {
					pn := jid[user]
					return pn.User + "|+" + pn.User + "|" + pn.String()
				},
				Emit: func(m channeltest.Message) channeltest.Emitted {
					mu.Lock()
					n++
					id := fmt.Sprintf("MSG%03d", n)
					mu.Unlock()
					from := jid[m.From]
					chat, body := from, text(m.Text)
					if m.Group {
						chat = group
						body = &waE2E.Message{ExtendedTextMessage: &waE2E.ExtendedTextMessage{
							Text:        proto.String("@" + botLID.User + " " + m.Text),
							ContextInfo: &waE2E.ContextInfo{MentionedJID: []string{botLID.String()}},
						}}
					}
					e := message(chat, from, id, body)
					e.Info.IsGroup = m.Group
					fake.events <- e
					return channeltest.Emitted{ChatID: chat.String(), MessageID: id}
				},
				Drop: func() {
					fake.events <- &events.Disconnected{}
					fake.events <- &events.Connected{}
				},
				Sent: func() []channeltest.Sent {
					fake.mu.Lock()
					defer fake.mu.Unlock()
					return slices.Clone(fake.out)
				},
				// Acked is left nil: WhatsApp's delivery receipt is sent by
				// whatsmeow when it decrypts a message, before the adapter
				// sees the event, so the adapter has no acknowledgement to
				// hold back. Its read receipt (blue ticks) is sent once the
				// message is queued, and only for admitted senders; that is
				// checked in TestDirectMessageAndLIDs and TestReadAfterQueue.
			}
		},
	})
}

// TestReadAfterQueue: the read receipt goes out only once Deliver
// returned, and never for a sender the gateway refused.
func TestReadAfterQueue(t *testing.T) {
	fake := newFake()
	hold, entered := make(chan struct{}), make(chan struct{}, 1)
	in := channels.InboxFunc(func(ctx context.Context, m bus.Inbound) error {
		if m.Content == "stranger" {
			return channels.ErrDenied
		}
		entered <- struct{}{}
		<-hold
		return nil
	})
	running(t, fake, in, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		fake.emit(message(malloryPN, malloryPN, "M0", text("stranger")))
		fake.emit(message(alicePN, alicePN, "M1", text("held")))
	}()
	<-entered // the stranger's message was handled before this one
	fake.mu.Lock()
	early := slices.Clone(fake.reads)
	fake.mu.Unlock()
	if len(early) != 0 {
		t.Errorf("read receipts %v while Deliver had not returned, want none", early)
	}
	close(hold)
	<-done
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if !slices.Equal(fake.reads, []types.MessageID{"M1"}) {
		t.Errorf("read receipts %v, want [M1] (none for the refused stranger)", fake.reads)
	}
}
