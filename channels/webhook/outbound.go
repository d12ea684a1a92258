package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// Reply is the JSON body POSTed to a hook's replyUrl, signed with the
// hook's secret (X-Nanobot-Timestamp, X-Nanobot-Signature).
type Reply struct {
	// Hook is the hook's name.
	Hook string `json:"hook"`
	// ChatID is the request's chatId.
	ChatID string `json:"chatId"`
	// Text is the agent's message (Markdown).
	Text string `json:"text"`
	// ReplyTo is the id of the request this answers ("" for messages that
	// answer nothing in particular, such as a cron job's output).
	ReplyTo string `json:"replyTo,omitempty"`
	// ID identifies this message; a retried POST carries the same id when
	// the gateway's outbox is on, so the receiver can drop duplicates.
	ID string `json:"id"`
	// Final marks the turn's last message.
	Final bool `json:"final,omitempty"`
	// IsError marks a message that reports a failure.
	IsError bool `json:"isError,omitempty"`
}

// waiter is a sync request waiting for its turn's final answer.
type waiter struct {
	parts []string // guarded by Channel.mu
	done  chan result
}

type result struct {
	text    string
	isError bool
}

func (c *Channel) register(msgID string) *waiter {
	w := &waiter{done: make(chan result, 1)}
	c.mu.Lock()
	c.waiters[msgID] = w
	c.mu.Unlock()
	return w
}

func (c *Channel) unregister(msgID string, w *waiter) {
	c.mu.Lock()
	if c.waiters[msgID] == w {
		delete(c.waiters, msgID)
	}
	c.mu.Unlock()
}

// answer hands m to the sync request waiting for it, if any: every message
// of the turn is collected and the final one completes the answer.
func (c *Channel) answer(m bus.Outbound) bool {
	if m.ReplyTo == "" {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.waiters[m.ReplyTo]
	if w == nil {
		return false
	}
	if t := strings.TrimSpace(m.Content); t != "" {
		w.parts = append(w.parts, t)
	}
	if m.Final {
		delete(c.waiters, m.ReplyTo)
		w.done <- result{text: strings.Join(w.parts, "\n\n"), isError: m.IsError}
	}
	return true
}

// Send implements channels.Channel: the answer of a waiting sync request,
// else a signed POST to the hook's replyUrl.
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	ref := channels.MessageRef{ChatID: m.ChatID, MessageID: newID()}
	if m.IdempotencyKey != "" {
		ref.MessageID = m.IdempotencyKey
	}
	if c.answer(m) {
		return ref, nil
	}
	name, chat, ok := strings.Cut(m.ChatID, ":")
	hook, known := c.cfg.Hooks[name]
	if !ok || !known {
		return ref, channels.Permanentf("webhook: send to chat %q: no such hook (chat ids are <hook>:<chatId>)", m.ChatID)
	}
	if hook.ReplyURL == "" {
		return ref, channels.Permanentf("webhook: hook %q has no replyUrl and no request is waiting in chat %q; message dropped", name, chat)
	}
	body, err := json.Marshal(Reply{
		Hook: name, ChatID: chat, Text: m.Content, ReplyTo: strings.TrimPrefix(m.ReplyTo, name+":"),
		ID: ref.MessageID, Final: m.Final, IsError: m.IsError,
	})
	if err != nil {
		return ref, channels.Permanentf("webhook: encoding the reply: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook.ReplyURL, bytes.NewReader(body))
	if err != nil {
		return ref, channels.Permanentf("webhook: hook %q replyUrl: %w", name, err)
	}
	ts := c.now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(hook.Secret, ts, body))
	if err := c.out.Send(req, nil); err != nil {
		err = fmt.Errorf("webhook: hook %q: reply POST: %w", name, err)
		var pe *channels.PermanentError
		var ra *channels.RetryAfterError
		switch {
		case errors.As(err, &ra):
			return ref, &channels.RetryAfterError{After: ra.After, Err: err}
		case errors.As(err, &pe):
			return ref, &channels.PermanentError{Err: err}
		}
		return ref, err
	}
	return ref, nil
}
