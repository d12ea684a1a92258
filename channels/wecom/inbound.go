package wecom

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

// encrypted is an image, file or video: a URL and the key of its content.
type encrypted struct {
	URL    string `json:"url"`
	AESKey string `json:"aeskey"`
	Name   string `json:"filename"`
}

// callback is the body of aibot_msg_callback and aibot_event_callback.
type callback struct {
	MsgID    string `json:"msgid"`
	ChatID   string `json:"chatid"`
	ChatType string `json:"chattype"` // single, group
	From     struct {
		UserID string `json:"userid"`
	} `json:"from"`
	MsgType string `json:"msgtype"`
	Text    struct {
		Content string `json:"content"`
	} `json:"text"`
	Voice struct {
		Content string `json:"content"`
	} `json:"voice"`
	Image encrypted `json:"image"`
	File  encrypted `json:"file"`
	Video encrypted `json:"video"`
	Mixed struct {
		Items []struct {
			MsgType string `json:"msgtype"`
			Text    struct {
				Content string `json:"content"`
			} `json:"text"`
			Image encrypted `json:"image"`
		} `json:"msg_item"`
	} `json:"mixed"`
	Event struct {
		Type string `json:"eventtype"`
	} `json:"event"`
}

// handle acts on one frame from WeCom.
func (c *Channel) handle(ctx context.Context, in channels.Inbox, k *conn, f frame) error {
	var b callback
	if err := json.Unmarshal(f.Body, &b); err != nil {
		c.log.Warn("wecom: unreadable callback skipped", "cmd", f.Cmd, "err", err)
		return nil
	}
	switch f.Cmd {
	case cmdEvent:
		switch b.Event.Type {
		case "disconnected_event":
			return channels.Fatal(errTakenOver)
		case "enter_chat":
			if c.cfg.WelcomeMessage != "" {
				go c.welcome(ctx, k, f.Headers.ReqID)
			}
		}
		return nil
	case cmdCallback:
		c.message(ctx, in, f.Headers.ReqID, b)
	default:
		c.log.Debug("wecom: frame with an unknown command", "cmd", f.Cmd)
	}
	return nil
}

// welcome answers enter_chat (WeCom takes it within 5 s of the event).
func (c *Channel) welcome(ctx context.Context, k *conn, reqID string) {
	body := map[string]any{"msgtype": "text", "text": map[string]string{"content": c.cfg.WelcomeMessage}}
	if _, err := k.request(ctx, cmdWelcome, reqID, body, c.ackTimeout); err != nil && ctx.Err() == nil {
		c.log.Warn("wecom: welcome message failed", "err", c.redact.Error(err))
	}
}

// leadingMention is the "@Bot " WeCom puts before a group message to the bot.
var leadingMention = regexp.MustCompile(`^@\S+\s*`)

// message delivers one user message.
func (c *Channel) message(ctx context.Context, in channels.Inbox, reqID string, b callback) {
	if b.MsgID == "" || b.From.UserID == "" {
		c.log.Warn("wecom: message without id or sender skipped", "msgid", b.MsgID)
		return
	}
	if c.dedup.Seen(b.MsgID) {
		return
	}
	group := b.ChatType == "group"
	chatID := b.From.UserID
	if group && b.ChatID != "" {
		chatID = b.ChatID
	}
	c.remember(reqID)
	m := bus.Inbound{
		Channel: c.Name(), SenderID: b.From.UserID, ChatID: chatID, MessageID: b.MsgID, IsGroup: group, ReceivedAt: time.Now(),
		Metadata: bus.Metadata{"req_id": reqID, "msgtype": b.MsgType},
	}
	var items []media.Item
	var texts []string
	switch b.MsgType {
	case "text":
		texts = append(texts, b.Text.Content)
	case "voice":
		texts = append(texts, b.Voice.Content)
	case "image":
		items = append(items, c.item(b.Image, "image.jpg"))
	case "file":
		items = append(items, c.item(b.File, b.File.Name))
	case "video":
		items = append(items, c.item(b.Video, "video.mp4"))
	case "mixed":
		for _, it := range b.Mixed.Items {
			switch it.MsgType {
			case "text":
				texts = append(texts, it.Text.Content)
			case "image":
				items = append(items, c.item(it.Image, "image.jpg"))
			}
		}
	default:
		texts = append(texts, "["+b.MsgType+" message]")
	}
	text := strings.TrimSpace(strings.Join(texts, "\n"))
	if group {
		text = strings.TrimSpace(leadingMention.ReplaceAllString(text, ""))
	}
	m.Content = text
	if len(items) > 0 {
		media.Collector{Dir: c.mediaDir, Max: c.cfg.MaxMediaBytes, Platform: "wecom", Log: c.log, Redact: c.redact.String}.
			Collect(ctx, &m, channels.Admits(in, c.Name(), m.SenderID), items)
	}
	if m.Content == "" && len(m.Media) == 0 {
		return
	}
	if err := channels.DeliverRetrying(ctx, in, m, c.log, c.backoffMin, c.backoffMax); err != nil && !errors.Is(err, channels.ErrDenied) {
		// WeCom does not deliver a message twice: say so rather than
		// leave the user waiting.
		channels.ReportLost(in, m, err, c.log)
		c.dedup.Forget(b.MsgID)
	}
}

// item is an encrypted attachment.
func (c *Channel) item(e encrypted, name string) media.Item {
	if e.Name != "" {
		name = e.Name
	}
	return media.Item{Name: name, Fetch: func(ctx context.Context) ([]byte, error) {
		data, err := media.Fetch(ctx, c.http, e.URL, nil, c.cfg.MaxMediaBytes+32)
		if err != nil {
			return nil, err
		}
		if e.AESKey == "" {
			return nil, errors.New("wecom: attachment without aeskey")
		}
		return decrypt(data, e.AESKey)
	}}
}
