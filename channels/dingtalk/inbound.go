package dingtalk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
	"github.com/nanobot-go/nanobot/gateway/bus"
)

// botMessage is the data of a /v1.0/im/bot/messages/get callback.
type botMessage struct {
	MsgID            string `json:"msgId"`
	ConversationID   string `json:"conversationId"`
	ConversationType string `json:"conversationType"` // "1" direct, "2" group
	ConversationName string `json:"conversationTitle"`
	SenderStaffID    string `json:"senderStaffId"`
	SenderID         string `json:"senderId"`
	SenderNick       string `json:"senderNick"`
	ChatbotUserID    string `json:"chatbotUserId"`
	RobotCode        string `json:"robotCode"`
	MsgType          string `json:"msgtype"`
	IsInAtList       bool   `json:"isInAtList"`
	Text             struct {
		Content string `json:"content"`
	} `json:"text"`
	Content json.RawMessage `json:"content"`
}

// content is the "content" object of picture, file, audio and video
// messages.
type content struct {
	DownloadCode string `json:"downloadCode"`
	FileName     string `json:"fileName"`
	Recognition  string `json:"recognition"`
	RichText     []struct {
		Text         string `json:"text"`
		Type         string `json:"type"`
		DownloadCode string `json:"downloadCode"`
	} `json:"richText"`
}

// attachment is a file to download, by its download code.
type attachment struct {
	code, name, mime string
}

// denyWatch remembers whether the gateway refused the sender.
type denyWatch struct {
	in     channels.Inbox
	denied bool
}

func (d *denyWatch) Deliver(ctx context.Context, m bus.Inbound) error {
	err := d.in.Deliver(ctx, m)
	if errors.Is(err, channels.ErrDenied) {
		d.denied = true
	}
	return err
}

// handleCallback turns one bot-message frame into an Inbound, delivers it
// and acknowledges the frame afterwards. A message the gateway could not
// take is left unacknowledged (DingTalk delivers it again).
func (c *Channel) handleCallback(ctx context.Context, in channels.Inbox, k *conn, f frame) {
	id := f.Headers["messageId"]
	var m botMessage
	if err := json.Unmarshal([]byte(f.Data), &m); err != nil {
		c.log.Warn("dingtalk: malformed bot message skipped", "frame", id, "err", err)
		_ = k.send(ctx, okAck(id, ""))
		return
	}
	msg, atts, ok := c.toInbound(&m)
	if !ok || c.dedup.Seen(msg.MessageID) {
		_ = k.send(ctx, okAck(id, ""))
		return
	}
	if len(atts) > 0 {
		c.download(ctx, in, &msg, atts, m.RobotCode)
	}
	dw := &denyWatch{in: in}
	if !channels.DeliverRetrying(ctx, dw, msg, c.log, c.backoffMin, c.backoffMax) && !dw.denied {
		c.dedup.Forget(msg.MessageID)
		return
	}
	if err := k.send(ctx, okAck(id, "")); err != nil {
		c.log.Warn("dingtalk: acknowledging a message failed", "message_id", msg.MessageID, "err", c.redact.Error(err))
	}
}

// toInbound converts a bot message. It reports false for messages the bot
// should not answer: malformed ones (logged), its own, direct messages
// under disablePrivateChat and group messages without an @-mention under
// the mention policy.
func (c *Channel) toInbound(m *botMessage) (bus.Inbound, []attachment, bool) {
	sender := m.SenderStaffID
	if sender == "" {
		sender = m.SenderID
	}
	if m.MsgID == "" || m.ConversationID == "" || sender == "" {
		c.log.Warn("dingtalk: bot message without msgId, conversationId or sender skipped", "msg_id", m.MsgID)
		return bus.Inbound{}, nil, false
	}
	if m.ChatbotUserID != "" && m.SenderID == m.ChatbotUserID {
		return bus.Inbound{}, nil, false
	}
	group := m.ConversationType == "2"
	if !group && c.cfg.DisablePrivateChat {
		c.log.Debug("dingtalk: direct message ignored (disablePrivateChat)", "sender", sender)
		return bus.Inbound{}, nil, false
	}
	if group && c.cfg.GroupPolicy == PolicyMention && !m.IsInAtList {
		return bus.Inbound{}, nil, false
	}
	text, atts, err := c.parseContent(m)
	if err != nil {
		c.log.Warn("dingtalk: malformed message content skipped", "msg_id", m.MsgID, "msgtype", m.MsgType, "err", err)
		return bus.Inbound{}, nil, false
	}
	msg := bus.Inbound{
		Channel:    c.Name(),
		SenderID:   sender,
		ChatID:     sender,
		Content:    text,
		MessageID:  m.MsgID,
		IsGroup:    group,
		ReceivedAt: time.Now(),
		Metadata: map[string]any{
			"sender_name":     m.SenderNick,
			"conversation_id": m.ConversationID,
			"msgtype":         m.MsgType,
		},
	}
	if group {
		msg.ChatID = GroupPrefix + m.ConversationID
		if m.ConversationName != "" {
			msg.Metadata["conversation_title"] = m.ConversationName
		}
		if c.cfg.GroupUserIsolation {
			msg.SessionKey = c.Name() + ":" + msg.ChatID + ":" + sender
		}
	}
	return msg, atts, true
}

// GroupPrefix marks a group ChatID ("group:<openConversationId>"); any
// other ChatID is a user's staff id (a direct chat).
const GroupPrefix = "group:"

// parseContent reads the text and attachments of each message type.
func (c *Channel) parseContent(m *botMessage) (string, []attachment, error) {
	if m.MsgType == "text" || m.MsgType == "" {
		return strings.TrimSpace(m.Text.Content), nil, nil
	}
	var ct content
	if len(m.Content) > 0 {
		if err := json.Unmarshal(m.Content, &ct); err != nil {
			return "", nil, err
		}
	}
	switch m.MsgType {
	case "picture":
		return "[image]", []attachment{{code: ct.DownloadCode, name: "image.jpg", mime: "image/jpeg"}}, nil
	case "file":
		return "[file: " + ct.FileName + "]", []attachment{{code: ct.DownloadCode, name: ct.FileName}}, nil
	case "audio":
		text := "[voice message]"
		if ct.Recognition != "" {
			text = ct.Recognition
		}
		return text, []attachment{{code: ct.DownloadCode, name: "voice.amr", mime: "audio/amr"}}, nil
	case "video":
		return "[video]", []attachment{{code: ct.DownloadCode, name: "video.mp4", mime: "video/mp4"}}, nil
	case "richText":
		var parts []string
		var atts []attachment
		for _, p := range ct.RichText {
			switch {
			case p.Text != "":
				parts = append(parts, p.Text)
			case p.DownloadCode != "":
				atts = append(atts, attachment{code: p.DownloadCode, name: "image.jpg", mime: "image/jpeg"})
			}
		}
		return strings.TrimSpace(strings.Join(parts, "")), atts, nil
	}
	return fmt.Sprintf("[unsupported %s message]", m.MsgType), nil, nil
}

// download fetches attachments into the media folder, only for senders the
// gate admits; failures become notes in the text.
func (c *Channel) download(ctx context.Context, in channels.Inbox, m *bus.Inbound, atts []attachment, robotCode string) {
	var notes []string
	defer func() {
		if len(notes) > 0 {
			m.Content = strings.TrimSpace(strings.Join(append([]string{m.Content}, notes...), "\n"))
		}
	}()
	if c.mediaDir == "" {
		return
	}
	if !channels.Admits(in, c.Name(), m.SenderID) {
		for _, a := range atts {
			notes = append(notes, fmt.Sprintf("[attachment %s: not downloaded, sender not allowed]", a.name))
		}
		return
	}
	if robotCode == "" {
		robotCode = c.cfg.ClientID
	}
	for i, a := range atts {
		if a.code == "" {
			continue
		}
		var out struct {
			DownloadURL string `json:"downloadUrl"`
		}
		err := c.call(ctx, "/v1.0/robot/messageFiles/download", map[string]string{"downloadCode": a.code, "robotCode": robotCode}, &out)
		var data []byte
		if err == nil {
			data, err = media.Fetch(ctx, c.files, out.DownloadURL, nil, c.cfg.MaxMediaBytes)
		}
		switch {
		case errors.Is(err, media.ErrTooLarge):
			notes = append(notes, fmt.Sprintf("[attachment %s: too large to download (over the limit of %s)]", a.name, media.Size(c.cfg.MaxMediaBytes)))
			continue
		case err != nil:
			c.log.Warn("dingtalk: attachment download failed", "message_id", m.MessageID, "name", a.name, "err", c.redact.Error(err))
			notes = append(notes, fmt.Sprintf("[attachment %s: download failed]", a.name))
			continue
		}
		mime := a.mime
		if mime == "" {
			mime = http.DetectContentType(data)
		}
		name := fmt.Sprintf("%s_%d%s", m.MessageID, i, media.Ext(a.name, "", mime))
		file, err := media.Save(c.mediaDir, name, data)
		if err != nil {
			c.log.Warn("dingtalk: saving an attachment failed", "err", err)
			notes = append(notes, fmt.Sprintf("[attachment %s: could not be saved]", a.name))
			continue
		}
		m.Media = append(m.Media, bus.Media{Path: file, MIMEType: mime, Name: a.name, Size: int64(len(data))})
	}
}
