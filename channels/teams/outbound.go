package teams

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/kit"
)

// outActivity is an activity the bot sends.
type outActivity struct {
	Type         string     `json:"type"`
	ID           string     `json:"id,omitempty"`
	Text         string     `json:"text,omitempty"`
	TextFormat   string     `json:"textFormat,omitempty"`
	ReplyToID    string     `json:"replyToId,omitempty"`
	From         *botMember `json:"from,omitempty"`
	Conversation struct {
		ID string `json:"id"`
	} `json:"conversation"`
}

// conversation finds where a conversation's activities go: the service
// URL from the message's metadata or the last activity seen there.
func (c *Channel) conversation(chatID string, meta bus.Metadata) (string, *botMember, error) {
	if chatID == "" {
		return "", nil, channels.Permanentf("teams: send: empty conversation id")
	}
	c.mu.Lock()
	svc, bot := c.services[chatID], c.bots[chatID]
	c.mu.Unlock()
	if svc == "" {
		svc = meta["service_url"]
	}
	if svc == "" {
		return "", nil, channels.Permanentf("teams: send: no service URL known for the conversation (the bot answers only in conversations it has heard from since it started)")
	}
	var from *botMember
	if bot.ID != "" {
		from = &bot
	}
	return strings.TrimRight(svc, "/") + "/v3/conversations/" + url.PathEscape(chatID) + "/activities", from, nil
}

// call sends one Connector request; a 401 drops the cached token and
// tries once more with a fresh one.
func (c *Channel) call(ctx context.Context, method, u string, a outActivity, out any) error {
	err := c.api.Do(ctx, method, u, a, out)
	if kit.Unauthorized(err) {
		if tok, terr := c.tokens.Get(ctx); terr == nil {
			c.tokens.Invalidate(tok)
		}
		err = c.api.Do(ctx, method, u, a, out)
	}
	return err
}

// Send implements channels.Channel: one message (already split to
// MessageLimit), as a reply to the message it answers.
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	if strings.TrimSpace(m.Content) == "" {
		return channels.MessageRef{}, channels.Permanentf("teams: send: empty message")
	}
	base, from, err := c.conversation(m.ChatID, m.Metadata)
	if err != nil {
		return channels.MessageRef{}, err
	}
	a := outActivity{Type: "message", Text: m.Content, TextFormat: "markdown", From: from}
	a.Conversation.ID = m.ChatID
	u := base
	// Streamed answers carry no ReplyTo; the activity they answer is in
	// the metadata.
	if reply := firstNonEmpty(m.ReplyTo, m.Metadata["activity_id"]); reply != "" {
		a.ReplyToID = reply
		u += "/" + url.PathEscape(reply)
	}
	var created struct {
		ID string `json:"id"`
	}
	if err := c.call(ctx, http.MethodPost, u, a, &created); err != nil {
		return channels.MessageRef{}, fmt.Errorf("teams: send: %w", err)
	}
	if created.ID == "" {
		return channels.MessageRef{}, errors.New("teams: send: the answer has no activity id")
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: created.ID}, nil
}

// Edit implements channels.Editor (streaming): the activity shows
// m.Content.
func (c *Channel) Edit(ctx context.Context, r channels.MessageRef, m bus.Outbound) error {
	if strings.TrimSpace(m.Content) == "" {
		return nil
	}
	base, from, err := c.conversation(r.ChatID, m.Metadata)
	if err != nil {
		return err
	}
	a := outActivity{Type: "message", ID: r.MessageID, Text: m.Content, TextFormat: "markdown", From: from}
	a.Conversation.ID = r.ChatID
	if err := c.call(ctx, http.MethodPut, base+"/"+url.PathEscape(r.MessageID), a, nil); err != nil {
		return fmt.Errorf("teams: edit activity %s: %w", r.MessageID, err)
	}
	return nil
}

// Typing implements channels.Typer with a typing activity (Teams shows it
// for a few seconds).
func (c *Channel) Typing(ctx context.Context, chatID string, meta bus.Metadata) error {
	base, from, err := c.conversation(chatID, meta)
	if err != nil {
		return err
	}
	a := outActivity{Type: "typing", From: from}
	a.Conversation.ID = chatID
	if err := c.call(ctx, http.MethodPost, base, a, nil); err != nil {
		return fmt.Errorf("teams: typing: %w", err)
	}
	return nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
