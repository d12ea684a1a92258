package dingtalk

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/gateway/bus"
)

// Send implements channels.Channel: a sampleMarkdown message to a group
// (ChatID "group:<openConversationId>") or to one user (ChatID = staff id).
// The returned MessageID is DingTalk's processQueryKey.
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	if strings.TrimSpace(m.ChatID) == "" {
		return channels.MessageRef{}, &channels.PermanentError{Err: errors.New("dingtalk: empty chat id")}
	}
	text := toDingTalk(m.Content)
	if strings.TrimSpace(text) == "" {
		return channels.MessageRef{ChatID: m.ChatID}, nil
	}
	param, _ := json.Marshal(map[string]string{"title": title(text), "text": text})
	var out struct {
		ProcessQueryKey string `json:"processQueryKey"`
	}
	var err error
	if conv, ok := strings.CutPrefix(m.ChatID, GroupPrefix); ok {
		err = c.call(ctx, "/v1.0/robot/groupMessages/send", map[string]any{
			"robotCode": c.cfg.ClientID, "openConversationId": conv, "msgKey": "sampleMarkdown", "msgParam": string(param),
		}, &out)
	} else {
		err = c.call(ctx, "/v1.0/robot/oToMessages/batchSend", map[string]any{
			"robotCode": c.cfg.ClientID, "userIds": []string{m.ChatID}, "msgKey": "sampleMarkdown", "msgParam": string(param),
		}, &out)
	}
	if err != nil {
		return channels.MessageRef{}, err
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: out.ProcessQueryKey}, nil
}
