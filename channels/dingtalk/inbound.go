package dingtalk

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

// robotMessage is the data of a robot message callback.
type robotMessage struct {
	MsgID             string `json:"msgId"`
	MsgType           string `json:"msgtype"`
	ConversationID    string `json:"conversationId"`
	ConversationType  string `json:"conversationType"` // "1" one-to-one, "2" group
	ConversationTitle string `json:"conversationTitle"`
	SenderStaffID     string `json:"senderStaffId"`
	SenderID          string `json:"senderId"`
	SenderNick        string `json:"senderNick"`
	ChatbotUserID     string `json:"chatbotUserId"`
	IsInAtList        bool   `json:"isInAtList"`
	Text              struct {
		Content string `json:"content"`
	} `json:"text"`
	Content json.RawMessage `json:"content"`
}

// fileContent is the content of picture, file, audio and video messages.
type fileContent struct {
	DownloadCode string `json:"downloadCode"`
	FileName     string `json:"fileName"`
	Recognition  string `json:"recognition"` // audio: DingTalk's transcript
	RichText     []struct {
		Text         string `json:"text"`
		DownloadCode string `json:"downloadCode"`
		Type         string `json:"type"`
	} `json:"richText"`
}

type outcome int

const (
	handled outcome = iota // delivered, denied or skipped: acknowledge
	failed                 // not taken: leave unacknowledged
)

// message handles one robot message.
func (c *Channel) message(ctx context.Context, in channels.Inbox, data string) outcome {
	var m robotMessage
	if err := json.Unmarshal([]byte(data), &m); err != nil || m.MsgID == "" || m.ConversationID == "" {
		c.log.Warn("dingtalk: unreadable robot message skipped", "err", err)
		return handled
	}
	if c.dedup.Seen(m.MsgID) {
		return handled
	}
	sender := m.SenderStaffID
	if sender == "" {
		sender = m.SenderID
	}
	group := m.ConversationType == "2"
	switch {
	case sender == "":
		c.log.Warn("dingtalk: robot message without a sender skipped", "message_id", m.MsgID)
		return handled
	case !group && c.cfg.DisablePrivateChat:
		return handled
	case !c.cfg.GroupPolicy.Admits(group, m.IsInAtList, m.ConversationID, c.cfg.GroupAllowFrom):
		return handled
	}
	msg := bus.Inbound{
		Channel: c.Name(), SenderID: sender, ChatID: sender, MessageID: m.MsgID, IsGroup: group, ReceivedAt: time.Now(),
		Metadata: bus.Metadata{"sender_name": m.SenderNick, "msgtype": m.MsgType},
	}
	if group {
		msg.ChatID = "group:" + m.ConversationID
		msg.Metadata["chat_title"] = m.ConversationTitle
		if c.cfg.GroupUserIsolation {
			msg.SessionKey = bus.SessionKeyOf(c.Name(), msg.ChatID, sender)
		}
	}
	var items []media.Item
	var fc fileContent
	if len(m.Content) > 0 {
		_ = json.Unmarshal(m.Content, &fc) // a text message's content is absent or plain
	}
	switch m.MsgType {
	case "text", "":
		msg.Content = strings.TrimSpace(m.Text.Content)
	case "audio":
		msg.Content = strings.TrimSpace(fc.Recognition)
		if msg.Content == "" {
			msg.Content = "[voice message]"
		}
	case "picture":
		items = append(items, c.item(fc.DownloadCode, "image.jpg"))
	case "file", "video":
		items = append(items, c.item(fc.DownloadCode, fc.FileName))
	case "richText":
		var parts []string
		for _, p := range fc.RichText {
			if p.Text != "" {
				parts = append(parts, p.Text)
			}
			if p.DownloadCode != "" {
				items = append(items, c.item(p.DownloadCode, "image.jpg"))
			}
		}
		msg.Content = strings.TrimSpace(strings.Join(parts, "\n"))
	default:
		msg.Content = "[" + m.MsgType + " message]"
	}
	if len(items) > 0 {
		media.Collector{Dir: c.mediaDir, Max: c.cfg.MaxMediaBytes, Platform: "dingtalk", Log: c.log, Redact: c.redact.String}.
			Collect(ctx, &msg, channels.Admits(in, c.Name(), sender), items)
	}
	if msg.Content == "" && len(msg.Media) == 0 {
		return handled
	}
	err := channels.DeliverRetrying(ctx, in, msg, c.log, c.backoffMin, c.backoffMax)
	if err == nil || errors.Is(err, channels.ErrDenied) {
		return handled
	}
	c.log.Warn("dingtalk: the gateway did not take a message; left unacknowledged for DingTalk to deliver again", "message_id", m.MsgID, "err", err)
	c.dedup.Forget(m.MsgID)
	return failed
}

// item is an attachment fetched by its download code: DingTalk trades the
// code for a short-lived URL.
func (c *Channel) item(code, name string) media.Item {
	return media.Item{Name: name, Fetch: func(ctx context.Context) ([]byte, error) {
		var out struct {
			DownloadURL string `json:"downloadUrl"`
		}
		if err := c.call(ctx, "/v1.0/robot/messageFiles/download", map[string]string{"downloadCode": code, "robotCode": c.cfg.RobotCode}, &out); err != nil {
			return nil, err
		}
		return media.Fetch(ctx, c.http, out.DownloadURL, nil, c.cfg.MaxMediaBytes)
	}}
}
