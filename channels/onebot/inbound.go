package onebot

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

// messageEvent is a OneBot v11 message event. Ids are kept raw: the
// implementations send numbers, some strings.
type messageEvent struct {
	MessageType string          `json:"message_type"`
	SubType     string          `json:"sub_type"`
	MessageID   json.RawMessage `json:"message_id"`
	UserID      json.RawMessage `json:"user_id"`
	GroupID     json.RawMessage `json:"group_id"`
	SelfID      json.RawMessage `json:"self_id"`
	Message     json.RawMessage `json:"message"`
	Sender      struct {
		Nickname string `json:"nickname"`
		Card     string `json:"card"`
	} `json:"sender"`
}

// handle decodes one message event and delivers it if it is for the bot.
func (c *Channel) handle(ctx context.Context, in channels.Inbox, b []byte) {
	var ev messageEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		c.log.Warn("onebot: malformed message event skipped", "err", err)
		return
	}
	segs, err := parseMessage(ev.Message)
	if err != nil {
		c.log.Warn("onebot: message event with an unreadable message skipped", "message_id", idOf(ev.MessageID), "err", err)
		return
	}
	m, items, ok := c.toInbound(ev, segs)
	if !ok {
		return
	}
	if len(items) > 0 {
		col := media.Collector{Dir: c.mediaDir, Max: c.cfg.MaxMediaBytes, Platform: "onebot", Log: c.log, Redact: c.redact.String}
		col.Collect(ctx, &m, channels.Admits(in, c.Name(), m.SenderID), items)
	}
	if strings.TrimSpace(m.Content) == "" && len(m.Media) == 0 {
		return
	}
	// OneBot events are pushed once and not acknowledged: a message the
	// gateway did not take is lost, and reported so.
	if err := channels.DeliverRetrying(ctx, in, m, c.log, c.backoffMin, c.backoffMax); err != nil && !errors.Is(err, channels.ErrDenied) {
		channels.ReportLost(in, m, err, c.log)
	}
}

// toInbound converts an event. It reports false for what the bot should
// not answer: its own messages, group messages outside the group policy,
// events without ids (logged).
func (c *Channel) toInbound(ev messageEvent, segs []segment) (bus.Inbound, []media.Item, bool) {
	msgID, user, group := idOf(ev.MessageID), idOf(ev.UserID), idOf(ev.GroupID)
	if msgID == "" || user == "" || (ev.MessageType != "private" && ev.MessageType != "group") || (ev.MessageType == "group" && group == "") {
		c.log.Warn("onebot: message event without id, sender or chat skipped", "message_type", ev.MessageType, "message_id", msgID)
		return bus.Inbound{}, nil, false
	}
	self := idOf(ev.SelfID)
	if self == "" {
		self = c.self()
	}
	if user == self {
		return bus.Inbound{}, nil, false
	}
	isGroup := ev.MessageType == "group"
	var text strings.Builder
	var items []media.Item
	addressed := false
	meta := bus.Metadata{"message_type": ev.MessageType, "user_id": user}
	for _, sg := range segs {
		d := sg.Data
		switch sg.Type {
		case "text":
			text.WriteString(d["text"])
		case "at":
			switch {
			case d["qq"] == self && self != "":
				addressed = true
			case d["qq"] == "all":
				text.WriteString("@all ")
			case d["name"] != "":
				text.WriteString("@" + d["name"] + " ")
			default:
				text.WriteString("@" + d["qq"] + " ")
			}
		case "reply":
			meta["reply_to"] = d["id"]
			if c.sentByMe(d["id"]) {
				addressed = true
			}
		case "face":
			text.WriteString("[face:" + d["id"] + "]")
		case "image":
			if it, ok := c.image(d); ok {
				items = append(items, it)
			} else {
				text.WriteString("[image]")
			}
		case "record":
			text.WriteString("[voice message]")
		case "video":
			text.WriteString("[video]")
		case "file":
			text.WriteString("[file " + d["name"] + "]")
		case "mface":
			text.WriteString("[sticker]")
		case "forward":
			text.WriteString("[forwarded messages]")
		case "json", "xml":
			text.WriteString("[card]")
		default:
			text.WriteString("[" + sg.Type + "]")
		}
	}
	if !c.cfg.GroupPolicy.Admits(isGroup, addressed, group, c.cfg.GroupAllowFrom) {
		c.log.Debug("onebot: group message not for the bot skipped", "group_id", group)
		return bus.Inbound{}, nil, false
	}
	chatID := user
	if isGroup {
		chatID = "group:" + group
		meta["group_id"] = group
	}
	if name := firstNonEmpty(ev.Sender.Card, ev.Sender.Nickname); name != "" {
		meta["nickname"] = name
	}
	return bus.Inbound{
		Channel:    c.Name(),
		SenderID:   user,
		ChatID:     chatID,
		MessageID:  msgID,
		Content:    strings.TrimSpace(text.String()),
		IsGroup:    isGroup,
		Metadata:   meta,
		ReceivedAt: time.Now(),
	}, items, true
}

// image turns an image segment into a download: from its url, or from a
// base64:// file; a bare file name the implementation keeps to itself
// cannot be fetched.
func (c *Channel) image(d map[string]string) (media.Item, bool) {
	name := d["file"]
	if raw, ok := strings.CutPrefix(name, "base64://"); ok {
		return media.Item{Name: "image", Fetch: func(context.Context) ([]byte, error) {
			if int64(base64.StdEncoding.DecodedLen(len(raw))) > c.cfg.MaxMediaBytes {
				return nil, media.ErrTooLarge
			}
			return base64.StdEncoding.DecodeString(raw)
		}}, true
	}
	url := d["url"]
	if url == "" && (strings.HasPrefix(name, "http://") || strings.HasPrefix(name, "https://")) {
		url = name
	}
	if url == "" {
		return media.Item{}, false
	}
	if strings.Contains(name, "/") || name == "" {
		name = "image"
	}
	return media.Item{Name: name, URL: url, Fetch: func(ctx context.Context) ([]byte, error) {
		return media.Fetch(ctx, c.http, url, nil, c.cfg.MaxMediaBytes)
	}}, true
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
