package web

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// Send implements channels.Channel.
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	c.mu.Lock()
	c.seq++
	id := fmt.Sprintf("m%d", c.seq)
	c.mu.Unlock()
	typ := "message"
	if m.IsError {
		typ = "error"
	}
	if err := c.broadcast(ctx, m.ChatID, Frame{Type: typ, ID: id, Text: m.Content, Final: m.Final}); err != nil {
		return channels.MessageRef{}, err
	}
	if m.Final && !m.IsError {
		c.answered(m.ChatID, id, m.Content)
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: id}, nil
}

// Edit implements channels.Editor.
func (c *Channel) Edit(ctx context.Context, ref channels.MessageRef, m bus.Outbound) error {
	if err := c.broadcast(ctx, ref.ChatID, Frame{Type: "edit", ID: ref.MessageID, Text: m.Content, Final: m.Final}); err != nil {
		return err
	}
	if m.Final && !m.IsError {
		c.answered(ref.ChatID, ref.MessageID, m.Content)
	}
	return nil
}

// StreamEnded implements channels.StreamEnder. The dispatcher makes no
// last edit when the stream's text is already on screen, so without this
// the page would never learn that the answer is complete (the workbench
// shows the stored turn then) and a temporary chat would not record it.
// The frame repeats the whole text with Final set; a page that saw the
// text already changes nothing.
func (c *Channel) StreamEnded(ctx context.Context, ref channels.MessageRef, m bus.Outbound) {
	if !m.Final || m.IsError || ref.MessageID == "" {
		return
	}
	if err := c.Edit(ctx, ref, m); err != nil {
		c.log.Debug("stream end not shown", "chat_id", ref.ChatID, "err", err)
	}
}

// Typing implements channels.Typer.
func (c *Channel) Typing(ctx context.Context, chatID string, _ bus.Metadata) error {
	return c.broadcast(ctx, chatID, Frame{Type: "typing"})
}

// broadcast writes f to every tab of the chat. A chat with no open tab has
// nothing to deliver to: the conversation keeps the answer, which the page
// shows when it is opened again, so that is not a failure (and not worth
// the dispatcher's "giving up").
func (c *Channel) broadcast(ctx context.Context, chat string, f Frame) error {
	c.mu.Lock()
	var targets []*conn
	for cn := range c.conns[chat] {
		targets = append(targets, cn)
	}
	c.mu.Unlock()
	if len(targets) == 0 {
		c.log.Debug("web: no open tab; the conversation keeps it", "chat", chat, "frame", f.Type)
		return nil
	}
	var errs []error
	for _, cn := range targets {
		if err := cn.write(ctx, f); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == len(targets) {
		return errors.Join(errs...)
	}
	return nil
}

type conn struct {
	ws   *websocket.Conn
	chat string
	wmu  sync.Mutex
}

func (cn *conn) write(ctx context.Context, f Frame) error {
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return wsjson.Write(ctx, cn.ws, f)
}
