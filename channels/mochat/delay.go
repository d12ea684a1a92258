package mochat

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// Reply delay modes (replyDelayMode), as the Python nanobot has them.
const (
	// DelayOff: panel messages that do not mention the bot follow
	// groupPolicy (under "mention" they are not answered).
	DelayOff = "off"
	// DelayNonMention: in panels, messages that do not mention the bot are
	// held; they are answered together, as one message, once the panel has
	// been quiet for replyDelayMs, or at once with the next message that
	// mentions the bot.
	DelayNonMention = "non-mention"
)

// delayer holds the panel messages of the non-mention reply delay. hold
// and take are called from the receiving goroutines; run owns the
// flushing and must run for held messages to be delivered.
type delayer struct {
	wait time.Duration

	mu    sync.Mutex
	chats map[string]*held
	wake  chan struct{} // capacity 1: a timer fired
}

type held struct {
	msgs  []bus.Inbound
	timer *time.Timer
	gen   int  // bumped by each hold, so a stale timer is ignored
	due   bool // the quiet period of gen has passed
}

func newDelayer(wait time.Duration) *delayer {
	return &delayer{wait: wait, chats: map[string]*held{}, wake: make(chan struct{}, 1)}
}

// hold keeps m and restarts its chat's quiet period.
func (d *delayer) hold(m bus.Inbound) {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := d.chats[m.ChatID]
	if h == nil {
		h = &held{}
		d.chats[m.ChatID] = h
	}
	h.msgs = append(h.msgs, m)
	if h.timer != nil {
		h.timer.Stop()
	}
	h.gen++
	h.due = false
	gen := h.gen
	h.timer = time.AfterFunc(d.wait, func() {
		d.mu.Lock()
		if d.chats[m.ChatID] == h && h.gen == gen {
			h.due = true
		}
		d.mu.Unlock()
		select {
		case d.wake <- struct{}{}:
		default:
		}
	})
}

// take removes and returns what is held for chat.
func (d *delayer) take(chat string) []bus.Inbound {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := d.chats[chat]
	if h == nil {
		return nil
	}
	h.timer.Stop()
	delete(d.chats, chat)
	return h.msgs
}

// run delivers each chat's held messages, merged, when its quiet period
// ends, until ctx ends; what is still held then is dropped (and counted in
// the log by the caller's deliver, which is not called for it).
func (d *delayer) run(ctx context.Context, deliver func(bus.Inbound)) int {
	for {
		select {
		case <-ctx.Done():
			d.mu.Lock()
			n := 0
			for chat, h := range d.chats {
				h.timer.Stop()
				n += len(h.msgs)
				delete(d.chats, chat)
			}
			d.mu.Unlock()
			return n
		case <-d.wake:
		}
		var due [][]bus.Inbound
		d.mu.Lock()
		for chat, h := range d.chats {
			if h.due {
				due = append(due, h.msgs)
				delete(d.chats, chat)
			}
		}
		d.mu.Unlock()
		for _, msgs := range due {
			deliver(merge(msgs))
		}
	}
}

// merge turns held panel messages into one: the last message, its text
// replaced by every message's text on its own line, prefixed with the
// sender's name when there is more than one.
func merge(msgs []bus.Inbound) bus.Inbound {
	last := msgs[len(msgs)-1]
	if len(msgs) == 1 {
		return last
	}
	var b strings.Builder
	for _, m := range msgs {
		if m.Content == "" {
			continue
		}
		label := m.Metadata["sender_name"]
		if label == "" {
			label = m.SenderID
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(label + ": " + m.Content)
	}
	out := last
	out.Content = b.String()
	out.Metadata = bus.Metadata{}
	for k, v := range last.Metadata {
		out.Metadata[k] = v
	}
	out.Metadata["buffered_count"] = strconv.Itoa(len(msgs))
	return out
}

// deliverHeld hands a flushed batch to the gateway, retrying like any
// inbound message. A batch the gateway did not take is lost (the cursors
// of its messages moved on when they were held) and reported so.
func (c *Channel) deliverHeld(ctx context.Context, in channels.Inbox, m bus.Inbound) {
	if err := channels.DeliverRetrying(ctx, in, m, c.log, c.backoffMin, c.backoffMax); err != nil && !errors.Is(err, channels.ErrDenied) {
		channels.ReportLost(in, m, err, c.log)
	}
}
