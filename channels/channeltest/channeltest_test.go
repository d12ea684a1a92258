package channeltest_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
)

// platform is an in-memory chat service: users post events, the bot's
// connection reads them, and it keeps what the bot sent.
type platform struct {
	mu      sync.Mutex
	queue   []event
	next    int // index of the first unacknowledged event
	wake    chan struct{}
	dropped chan struct{}
	seq     int
	sent    []channeltest.Sent
}

type event struct {
	id               int
	from, chat, text string
	group, malformed bool
}

func newPlatform() *platform {
	return &platform{wake: make(chan struct{}), dropped: make(chan struct{})}
}

func (p *platform) post(e event) event {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	e.id = p.seq
	p.queue = append(p.queue, e)
	close(p.wake)
	p.wake = make(chan struct{})
	return e
}

// read blocks until an unacknowledged event exists, the connection drops,
// or ctx ends.
func (p *platform) read(ctx context.Context) (event, error) {
	for {
		p.mu.Lock()
		if p.next < len(p.queue) {
			e := p.queue[p.next]
			p.mu.Unlock()
			return e, nil
		}
		wake, dropped := p.wake, p.dropped
		p.mu.Unlock()
		select {
		case <-wake:
		case <-dropped:
			return event{}, errors.New("connection reset")
		case <-ctx.Done():
			return event{}, ctx.Err()
		}
	}
}

func (p *platform) ack(id int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next < len(p.queue) && p.queue[p.next].id == id {
		p.next++
	}
}

func (p *platform) acked(id int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next > 0 && p.queue[p.next-1].id >= id
}

func (p *platform) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.dropped)
	p.dropped = make(chan struct{})
}

func (p *platform) record(s channeltest.Sent) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !s.Edit {
		p.seq++
		s.MessageID = "out" + strconv.Itoa(p.seq)
	}
	s.At = time.Now()
	p.sent = append(p.sent, s)
	return s.MessageID
}

// memChannel is a minimal adapter for platform.
type memChannel struct {
	p   *platform
	log *slog.Logger
}

func (c *memChannel) Name() string                { return "mem" }
func (c *memChannel) MessageLimit() int           { return 300 }
func (c *memChannel) EditInterval() time.Duration { return 40 * time.Millisecond }

func (c *memChannel) Run(ctx context.Context, in channels.Inbox) error {
	for {
		e, err := c.p.read(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			c.log.Warn("connection lost; reconnecting", "err", err)
			select {
			case <-time.After(10 * time.Millisecond):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		if e.malformed {
			c.log.Warn("malformed event skipped", "id", e.id)
			c.p.ack(e.id)
			continue
		}
		m := bus.Inbound{Channel: c.Name(), SenderID: "u-" + e.from, ChatID: e.chat, MessageID: strconv.Itoa(e.id), Content: e.text, IsGroup: e.group, ReceivedAt: time.Now()}
		if err := in.Deliver(ctx, m); err != nil && !errors.Is(err, channels.ErrDenied) {
			return nil // ctx ended: leave it unacknowledged
		}
		c.p.ack(e.id)
	}
}

func (c *memChannel) Send(_ context.Context, m bus.Outbound) (channels.MessageRef, error) {
	id := c.p.record(channeltest.Sent{ChatID: m.ChatID, Text: m.Content})
	return channels.MessageRef{ChatID: m.ChatID, MessageID: id}, nil
}

func (c *memChannel) Edit(_ context.Context, ref channels.MessageRef, m bus.Outbound) error {
	c.p.record(channeltest.Sent{ChatID: ref.ChatID, MessageID: ref.MessageID, Edit: true, Text: m.Content})
	return nil
}

// plainChannel is memChannel without edits.
type plainChannel struct{ *memChannel }

func (plainChannel) EditInterval() {} // hides Editor

func harness(editor bool) channeltest.Harness {
	return channeltest.Harness{Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
		p := newPlatform()
		mc := &memChannel{p: p, log: env.Log}
		var ch channels.Channel = mc
		if !editor {
			ch = plainChannel{mc}
		}
		return channeltest.Fixture{
			Channel:  ch,
			SenderID: func(user string) string { return "u-" + user },
			Emit: func(m channeltest.Message) channeltest.Emitted {
				chat := "dm-" + m.From
				if m.Group {
					chat = "group-1"
				}
				e := p.post(event{from: m.From, chat: chat, text: m.Text, group: m.Group})
				return channeltest.Emitted{ChatID: chat, MessageID: strconv.Itoa(e.id)}
			},
			EmitMalformed: func() { p.post(event{malformed: true}) },
			Drop:          p.drop,
			Sent: func() []channeltest.Sent {
				p.mu.Lock()
				defer p.mu.Unlock()
				return append([]channeltest.Sent(nil), p.sent...)
			},
			Acked: func(e channeltest.Emitted) bool {
				id, _ := strconv.Atoi(e.MessageID)
				return p.acked(id)
			},
		}
	}}
}

func TestSuiteOnEditor(t *testing.T) { channeltest.Run(t, harness(true)) }
func TestSuiteOnPlain(t *testing.T)  { channeltest.Run(t, harness(false)) }
