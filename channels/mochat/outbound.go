package mochat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// Send implements channels.Channel: the text to the session or panel,
// answering m.ReplyTo when set.
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	text := strings.TrimSpace(m.Content)
	if text == "" {
		return channels.MessageRef{}, channels.Permanentf("mochat: empty message")
	}
	path, body := "/api/claw/sessions/send", map[string]any{"sessionId": m.ChatID, "content": text}
	if panel, ok := strings.CutPrefix(m.ChatID, panelPrefix); ok {
		path, body = "/api/claw/groups/panels/send", map[string]any{"panelId": panel, "content": text}
		if g := m.Metadata["group_id"]; g != "" {
			body["groupId"] = g
		}
	}
	if strings.TrimSpace(m.ChatID) == "" || body["sessionId"] == "" || body["panelId"] == "" {
		return channels.MessageRef{}, channels.Permanentf("mochat: send: empty chat id")
	}
	if m.ReplyTo != "" {
		body["replyTo"] = m.ReplyTo
	}
	var out struct {
		MessageID string `json:"messageId"`
		ID        string `json:"id"`
	}
	if err := c.call(ctx, path, body, &out); err != nil {
		return channels.MessageRef{}, fmt.Errorf("mochat: send to %s: %w", m.ChatID, err)
	}
	id := out.MessageID
	if id == "" {
		id = out.ID
	}
	if id == "" { // the server did not say; a local id keeps the ref usable
		var b [8]byte
		_, _ = rand.Read(b[:])
		id = "local-" + hex.EncodeToString(b[:])
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: id}, nil
}
