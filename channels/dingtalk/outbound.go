package dingtalk

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// Send implements channels.Channel: a sampleMarkdown message to the group
// or the user.
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	text := strings.TrimSpace(m.Content)
	if text == "" {
		return channels.MessageRef{}, channels.Permanentf("dingtalk: empty message")
	}
	param, _ := json.Marshal(map[string]string{"title": title(text), "text": toDingTalk(text)})
	body := map[string]any{"robotCode": c.cfg.RobotCode, "msgKey": "sampleMarkdown", "msgParam": string(param)}
	path := "/v1.0/robot/oToMessages/batchSend"
	if conv, ok := strings.CutPrefix(m.ChatID, "group:"); ok {
		path, body["openConversationId"] = "/v1.0/robot/groupMessages/send", conv
	} else {
		body["userIds"] = []string{m.ChatID}
	}
	if strings.TrimSpace(strings.TrimPrefix(m.ChatID, "group:")) == "" {
		return channels.MessageRef{}, channels.Permanentf("dingtalk: send: empty chat id")
	}
	var out struct {
		ProcessQueryKey     string   `json:"processQueryKey"`
		InvalidStaffIDList  []string `json:"invalidStaffIdList"`
		FlowControlledStaff []string `json:"flowControlledStaffIdList"`
	}
	if err := c.call(ctx, path, body, &out); err != nil {
		return channels.MessageRef{}, fmt.Errorf("dingtalk: send to %s: %w", m.ChatID, err)
	}
	if len(out.InvalidStaffIDList) > 0 {
		return channels.MessageRef{}, channels.Permanentf("dingtalk: send to %s: not a member of the organisation", m.ChatID)
	}
	if len(out.FlowControlledStaff) > 0 {
		return channels.MessageRef{}, fmt.Errorf("dingtalk: send to %s: rate limited by DingTalk", m.ChatID)
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: out.ProcessQueryKey}, nil
}

// title is the notification title of a markdown message: its first line,
// without Markdown marks, at most 20 characters.
func title(text string) string {
	line, _, _ := strings.Cut(text, "\n")
	line = strings.NewReplacer("**", "", "__", "", "`", "").Replace(line)
	line = strings.TrimSpace(strings.Trim(line, "#*_> -"))
	if line == "" {
		return "nanobot"
	}
	if utf8.RuneCountInString(line) > 20 {
		line = string([]rune(line)[:20]) + "…"
	}
	return line
}
