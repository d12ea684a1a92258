package xmpp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"strings"

	"mellium.im/xmpp/jid"
	"mellium.im/xmpp/stanza"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// ErrNotConnected is returned (wrapped) by Send, Edit and Typing while
// there is no connection; the dispatcher retries.
var ErrNotConnected = errors.New("xmpp: not connected")

// Send implements channels.Channel: one message of type chat, or
// groupchat to a configured room, with the text as its body (XMPP clients
// show Markdown-like styling, XEP-0393, as written).
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	if strings.TrimSpace(m.Content) == "" {
		return channels.MessageRef{}, channels.Permanentf("xmpp: send to %s: empty message", m.ChatID)
	}
	id := newID()
	if err := c.sendMessage(ctx, m.ChatID, id, m.Content, ""); err != nil {
		return channels.MessageRef{}, err
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: id}, nil
}

// Edit implements channels.Editor: a Last Message Correction (XEP-0308)
// replacing the message ref names with the whole new text.
func (c *Channel) Edit(ctx context.Context, ref channels.MessageRef, m bus.Outbound) error {
	if strings.TrimSpace(m.Content) == "" {
		return nil
	}
	return c.sendMessage(ctx, ref.ChatID, newID(), m.Content, ref.MessageID)
}

// Typing implements channels.Typer: a "composing" chat state (XEP-0085).
// The next message carries "active", which ends it.
func (c *Channel) Typing(ctx context.Context, chatID string, _ bus.Metadata) error {
	if !c.cfg.chatStates() {
		return nil
	}
	return c.send(ctx, "typing in", chatID, newID(), element(nsChatStates, "composing", nil))
}

// sendMessage sends one body to chatID, as a correction of replaces when
// it is set.
func (c *Channel) sendMessage(ctx context.Context, chatID, id, body, replaces string) error {
	parts := []xml.TokenReader{element("", "body", nil, text(body))}
	if replaces != "" {
		parts = append(parts, element(nsCorrect, "replace", attrs("id", replaces)))
	}
	if c.cfg.chatStates() {
		parts = append(parts, element(nsChatStates, "active", nil))
	}
	op := "send to"
	if replaces != "" {
		op = "correct " + replaces + " in"
	}
	return c.send(ctx, op, chatID, id, multi(parts))
}

// send wraps payload in a message stanza with id for chatID and sends it
// over the live session; op ("send to", "typing in") names it in errors.
func (c *Channel) send(ctx context.Context, op, chatID, id string, payload xml.TokenReader) error {
	to, typ, err := c.address(chatID)
	if err != nil {
		return err
	}
	sess := c.session()
	if sess == nil {
		return fmt.Errorf("xmpp: %s %s: %w", op, chatID, ErrNotConnected)
	}
	msg := stanza.Message{To: to, Type: typ, ID: id}
	if err := sess.Send(ctx, msg.Wrap(payload)); err != nil {
		return fmt.Errorf("xmpp: %s %s: %w", op, chatID, err)
	}
	return nil
}

// address parses a chat id: a configured room gets groupchat messages,
// anything else is a 1:1 chat.
func (c *Channel) address(chatID string) (jid.JID, stanza.MessageType, error) {
	to, err := jid.Parse(chatID)
	if err != nil || to.Localpart() == "" {
		return jid.JID{}, "", channels.Permanentf("xmpp: chat id %q is not a JID", chatID)
	}
	if c.room(to) != nil {
		return to.Bare(), stanza.GroupChatMessage, nil
	}
	return to.Bare(), stanza.ChatMessage, nil
}

// newID is a fresh stanza id; corrections refer to it.
func newID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
