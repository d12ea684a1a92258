package wecom

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/kit"
)

// replyWindow is how long WeCom keeps a message's req_id open for replies
// (5 minutes), less a margin.
const replyWindow = 4*time.Minute + 30*time.Second

// replyState is a message's req_id: it opens one stream.
type replyState struct {
	at   time.Time
	used bool
}

// stream is an open streaming reply.
type stream struct {
	mu       sync.Mutex
	reqID    string
	content  string
	finished bool
}

// remember records an inbound message's req_id and forgets expired ones.
func (c *Channel) remember(reqID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for id, r := range c.replies {
		if now.Sub(r.at) > replyWindow {
			delete(c.replies, id)
		}
	}
	for id, s := range c.streams {
		if st := c.replies[s.reqID]; st == nil {
			delete(c.streams, id) // its req_id expired
		}
	}
	c.replies[reqID] = &replyState{at: now}
}

// claim takes the req_id for a reply, if it is still open and unused.
func (c *Channel) claim(reqID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.replies[reqID]
	if r == nil || r.used || time.Since(r.at) > replyWindow {
		return false
	}
	r.used = true
	return true
}

// Send implements channels.Channel: the answer to a message opens a
// streaming reply on its req_id (finished at once unless the dispatcher
// streams into it); anything else is pushed as Markdown.
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	text := strings.TrimSpace(m.Content)
	if text == "" {
		return channels.MessageRef{}, channels.Permanentf("wecom: empty message")
	}
	if m.ChatID == "" {
		return channels.MessageRef{}, channels.Permanentf("wecom: send: empty chat id")
	}
	k, err := c.live()
	if err != nil {
		return channels.MessageRef{}, err
	}
	if reqID := m.Metadata["req_id"]; reqID != "" && c.claim(reqID) {
		// A message the dispatcher will stream into (the first text of a
		// stream) stays open; anything else is complete.
		open := m.StreamID != "" && m.Kind != bus.KindStreamEnd && !m.Final
		s := &stream{reqID: reqID, content: text, finished: !open}
		id := newReqID("stream")
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, err := k.request(ctx, cmdRespond, reqID, streamBody(id, text, s.finished), c.ackTimeout); err != nil {
			return channels.MessageRef{}, c.sendError(err)
		}
		if !s.finished {
			c.mu.Lock()
			c.streams[id] = s
			c.mu.Unlock()
		}
		return channels.MessageRef{ChatID: m.ChatID, MessageID: id, Extra: map[string]string{"req_id": reqID}}, nil
	}
	reqID := newReqID(cmdSend)
	body := map[string]any{"chatid": m.ChatID, "msgtype": "markdown", "markdown": map[string]string{"content": text}}
	if _, err := k.request(ctx, cmdSend, reqID, body, c.ackTimeout); err != nil {
		return channels.MessageRef{}, c.sendError(err)
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: reqID}, nil
}

func streamBody(id, content string, finish bool) map[string]any {
	return map[string]any{"msgtype": "stream", "stream": map[string]any{"id": id, "content": content, "finish": finish}}
}

// sendError marks WeCom's refusals as permanent (retrying the same frame
// cannot help); timeouts and lost connections stay retryable.
func (c *Channel) sendError(err error) error {
	var ae *kit.APIError
	if errors.As(err, &ae) {
		return &channels.PermanentError{Err: errors.New(c.redact.Error(err))}
	}
	return errors.New(c.redact.Error(err))
}

// Edit implements channels.Editor: the stream shows m.Content (the whole
// text so far); the end of the reply finishes it. Pushed messages cannot be
// edited.
func (c *Channel) Edit(ctx context.Context, ref channels.MessageRef, m bus.Outbound) error {
	c.mu.Lock()
	s := c.streams[ref.MessageID]
	c.mu.Unlock()
	if s == nil {
		return channels.Permanentf("wecom: edit %s: not an open streaming reply", ref.MessageID)
	}
	finish := m.Kind == bus.KindStreamEnd || m.Final
	return c.update(ctx, ref.MessageID, s, strings.TrimSpace(m.Content), finish)
}

// Finish implements channels.Finisher: the stream ends with the text it
// shows.
func (c *Channel) Finish(ctx context.Context, ref channels.MessageRef) error {
	c.mu.Lock()
	s := c.streams[ref.MessageID]
	c.mu.Unlock()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	content := s.content
	s.mu.Unlock()
	return c.update(ctx, ref.MessageID, s, content, true)
}

func (c *Channel) update(ctx context.Context, id string, s *stream, content string, finish bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		if finish && content == s.content {
			return nil
		}
		return channels.Permanentf("wecom: edit %s: the reply is finished", id)
	}
	k, err := c.live()
	if err != nil {
		return err
	}
	if _, err := k.request(ctx, cmdRespond, s.reqID, streamBody(id, content, finish), c.ackTimeout); err != nil {
		return c.sendError(err)
	}
	s.content = content
	if finish {
		s.finished = true
		c.mu.Lock()
		delete(c.streams, id)
		c.mu.Unlock()
	}
	return nil
}
