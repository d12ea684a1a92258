package sessions

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/tools"
)

// Sender hands a message to the agent (the bus) for another session.
type Sender func(ctx context.Context, m bus.Inbound) error

// Send is the send_session_message tool.
type Send struct {
	src  Source
	send Sender
	now  func() time.Time

	mu   sync.Mutex
	sent map[string][]time.Time // by sending session: the last minute's sends
	seq  int64
}

func newSend(src Source, send Sender) *Send {
	return &Send{src: src, send: send, now: time.Now, sent: map[string][]time.Time{}}
}

func (t *Send) Name() string { return "send_session_message" }
func (t *Send) Description() string {
	return fmt.Sprintf("Send a message into another of the agent's conversations (session_key from list_sessions): the agent there gets it as a new turn and answers in that chat. "+
		"Use it when the owner asks to pass something on, e.g. \"tell the family group dinner is at 8\". At most %d per minute. Owner only.", sendsPerMinute)
}
func (t *Send) Parameters() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{
		"to":      map[string]any{"type": "string", "minLength": 1, "maxLength": 512, "description": "The session_key of the conversation to write to."},
		"content": map[string]any{"type": "string", "minLength": 1, "maxLength": maxSendChars, "description": "What to pass on, with what the agent there should do with it."},
	}, "required": []any{"to", "content"}}
}

func (t *Send) Execute(ctx context.Context, args map[string]any) (tools.Result, error) {
	current, err := owner(ctx)
	if err != nil {
		return tools.Result{}, err
	}
	a := tools.Args(args)
	to, content := strings.TrimSpace(a.String("to")), strings.TrimSpace(a.String("content"))
	if to == current {
		return tools.Result{}, errors.New("that is the current conversation: answer here instead")
	}
	if content == "" {
		return tools.Result{}, errors.New("content is empty")
	}
	sum, _, err := t.src.Read(ctx, to)
	if errors.Is(err, ErrNotFound) {
		return tools.Result{}, fmt.Errorf("no conversation %q; list_sessions shows the keys", to)
	}
	if err != nil {
		return tools.Result{}, fmt.Errorf("find %s: %w", to, err)
	}
	if sum.Channel == "" || sum.Chat == "" {
		return tools.Result{}, fmt.Errorf("conversation %s has no chat to answer in", to)
	}
	id, err := t.take(current)
	if err != nil {
		return tools.Result{}, err
	}
	m := bus.Inbound{
		Channel: sum.Channel, ChatID: sum.Chat, SessionKey: to, SenderID: "session:" + current,
		Content: fmt.Sprintf("[A message passed on from the owner's conversation %s. Act on it here and answer in this chat; "+
			"do not mention the other conversation unless the message asks you to.]\n\n%s", current, content),
		MessageID:  "session:" + id,
		Source:     bus.SourceSession,
		SourceRef:  current,
		ReceivedAt: t.now(),
	}
	if err := t.send(ctx, m); err != nil {
		return tools.Result{}, fmt.Errorf("not sent: %w", err)
	}
	return tools.Result{Content: fmt.Sprintf("Sent to %s (%s). The agent there answers in that chat.", to, sum.Channel)}, nil
}

// take counts one send from session from, or says it is over the rate.
func (t *Send) take(from string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	recent := t.sent[from][:0]
	for _, at := range t.sent[from] {
		if now.Sub(at) < time.Minute {
			recent = append(recent, at)
		}
	}
	if len(recent) >= sendsPerMinute {
		t.sent[from] = recent
		return "", fmt.Errorf("%d messages to other conversations in the last minute already; wait a minute", sendsPerMinute)
	}
	t.sent[from] = append(recent, now)
	t.seq++
	return strconv.FormatInt(now.UnixNano(), 36) + "-" + strconv.FormatInt(t.seq, 36), nil
}
