package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

// EventMessageReceive is the event type of a message sent to the bot.
const EventMessageReceive = "im.message.receive_v1"

// envelope is an event callback (schema 2.0), possibly encrypted.
type envelope struct {
	Encrypt string `json:"encrypt"`
	Schema  string `json:"schema"`
	Header  struct {
		EventID   string `json:"event_id"`
		EventType string `json:"event_type"`
		Token     string `json:"token"`
	} `json:"header"`
	Event json.RawMessage `json:"event"`
}

type userID struct {
	OpenID  string `json:"open_id"`
	UserID  string `json:"user_id"`
	UnionID string `json:"union_id"`
}

type mention struct {
	Key  string `json:"key"`
	ID   userID `json:"id"`
	Name string `json:"name"`
}

// messageEvent is the event of im.message.receive_v1.
type messageEvent struct {
	Sender struct {
		SenderID   userID `json:"sender_id"`
		SenderType string `json:"sender_type"`
	} `json:"sender"`
	Message struct {
		MessageID   string    `json:"message_id"`
		RootID      string    `json:"root_id"`
		ParentID    string    `json:"parent_id"`
		ThreadID    string    `json:"thread_id"`
		ChatID      string    `json:"chat_id"`
		ChatType    string    `json:"chat_type"`
		MessageType string    `json:"message_type"`
		Content     string    `json:"content"`
		Mentions    []mention `json:"mentions"`
	} `json:"message"`
}

// handleEvent handles one event payload and reports whether to acknowledge
// it: everything but a message the Inbox failed to take is acknowledged
// (malformed and unwanted events would only come back).
func (c *Channel) handleEvent(ctx context.Context, in channels.Inbox, payload []byte) bool {
	var env envelope
	if err := json.Unmarshal(payload, &env); err != nil {
		c.log.Warn("feishu: undecodable event skipped", "err", err, "bytes", len(payload))
		return true
	}
	if env.Encrypt != "" {
		plain, err := decrypt(c.cfg.EncryptKey, env.Encrypt)
		if err == nil {
			env = envelope{}
			err = json.Unmarshal(plain, &env)
		}
		if err != nil {
			c.log.Warn("feishu: encrypted event skipped", "err", err)
			return true
		}
	}
	// Events on the long connection need no token (the connection is
	// authenticated); one that carries a different token is not ours.
	if c.cfg.VerificationToken != "" && env.Header.Token != "" && env.Header.Token != c.cfg.VerificationToken {
		c.log.Warn("feishu: event with a wrong verification token skipped", "event_id", env.Header.EventID)
		return true
	}
	if env.Header.EventType != EventMessageReceive {
		c.log.Debug("feishu: event ignored", "event_type", env.Header.EventType)
		return true
	}
	var ev messageEvent
	if err := json.Unmarshal(env.Event, &ev); err != nil {
		c.log.Warn("feishu: malformed message event skipped", "err", err, "event_id", env.Header.EventID)
		return true
	}
	m, refs, ok := c.toInbound(&ev)
	if !ok {
		return true
	}
	if c.dedup.Seen(m.MessageID) {
		c.log.Debug("feishu: duplicate message skipped", "message_id", m.MessageID)
		return true
	}
	if len(refs) > 0 {
		c.download(ctx, in, &m, refs)
	}
	if strings.TrimSpace(m.Content) == "" && len(m.Media) == 0 {
		return true
	}
	err := channels.DeliverRetrying(ctx, in, m, c.log, c.backoffMin, c.backoffMax)
	if errors.Is(err, channels.ErrDenied) {
		return true // acknowledged, never retried
	}
	if err != nil {
		// Not taken: leave it unacknowledged so that the platform delivers
		// it again, and let that redelivery through.
		c.log.Warn("feishu: the gateway did not take a message; left for Feishu to deliver again", "message_id", m.MessageID, "err", err)
		c.dedup.Forget(m.MessageID)
		return false
	}
	if c.cfg.ReactEmoji != "" {
		c.bg.Go(func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if err := c.React(rctx, m.ChatID, m.MessageID, c.cfg.ReactEmoji); err != nil {
				c.log.Debug("feishu: reaction failed", "message_id", m.MessageID, "err", err)
			}
		})
	}
	return true
}

// resource is an attachment to download: a file_key of a message.
type resource struct {
	key  string
	kind string // "image" or "file" (the resources API's type)
	name string
}

// toInbound converts a message event. It reports false for what the bot
// should not answer: its own messages and other apps', group messages not
// addressed to it under the mention policy, and malformed ones (logged).
func (c *Channel) toInbound(ev *messageEvent) (bus.Inbound, []resource, bool) {
	msg := ev.Message
	sender := ev.Sender.SenderID.OpenID
	if msg.MessageID == "" || msg.ChatID == "" || sender == "" {
		c.log.Warn("feishu: message without id, chat or sender skipped", "message_id", msg.MessageID, "chat_id", msg.ChatID)
		return bus.Inbound{}, nil, false
	}
	me := c.self()
	if (ev.Sender.SenderType != "" && ev.Sender.SenderType != "user") || sender == me {
		return bus.Inbound{}, nil, false
	}
	isGroup := msg.ChatType != "p2p"
	addressed := false
	for _, mt := range msg.Mentions {
		if me != "" && mt.ID.OpenID == me {
			addressed = true
		}
	}
	if !c.cfg.GroupPolicy.Admits(isGroup, addressed, msg.ChatID, c.cfg.GroupAllowFrom) {
		c.log.Debug("feishu: group message not for the bot skipped", "chat_id", msg.ChatID)
		return bus.Inbound{}, nil, false
	}
	text, refs, err := parseContent(msg.MessageType, msg.Content)
	if err != nil {
		c.log.Warn("feishu: message with malformed content skipped", "message_id", msg.MessageID, "type", msg.MessageType, "err", err)
		return bus.Inbound{}, nil, false
	}
	text = replaceMentions(text, msg.Mentions, me)
	meta := bus.Metadata{
		"message_id": msg.MessageID,
		"chat_type":  msg.ChatType,
		"open_id":    sender,
	}
	if ev.Sender.SenderID.UserID != "" {
		meta["user_id"] = ev.Sender.SenderID.UserID
	}
	if msg.RootID != "" {
		meta["root_id"] = msg.RootID
	}
	if msg.ThreadID != "" {
		meta["thread_id"] = msg.ThreadID
	}
	m := bus.Inbound{
		Channel:    c.Name(),
		SenderID:   sender,
		ChatID:     msg.ChatID,
		MessageID:  msg.MessageID,
		Content:    strings.TrimSpace(text),
		IsGroup:    isGroup,
		Metadata:   meta,
		ReceivedAt: time.Now(),
	}
	if topic := c.topic(msg.ChatType, msg.ThreadID, msg.RootID, msg.MessageID); topic != "" {
		meta["topic"] = topic
		m.SessionKey = bus.SessionKeyOf(c.Name(), msg.ChatID, topic)
	}
	return m, refs, true
}

// topic is the topic a group message belongs to when topics are isolated:
// its thread, its root message, or (a new topic in a topic group) itself.
func (c *Channel) topic(chatType, threadID, rootID, messageID string) string {
	if !c.cfg.TopicIsolation || chatType == "p2p" {
		return ""
	}
	switch {
	case threadID != "":
		return threadID
	case chatType == "topic_group" && rootID != "":
		return rootID
	case chatType == "topic_group":
		return messageID
	}
	return ""
}

// replaceMentions writes @_user_N placeholders as @name and drops the
// bot's own.
func replaceMentions(text string, ms []mention, me string) string {
	for _, mt := range ms {
		if mt.Key == "" {
			continue
		}
		if me != "" && mt.ID.OpenID == me {
			text = strings.ReplaceAll(strings.ReplaceAll(text, mt.Key+" ", ""), mt.Key, "")
			continue
		}
		text = strings.ReplaceAll(text, mt.Key, "@"+mt.Name)
	}
	return text
}

// parseContent reads a message's content (a JSON string whose shape
// depends on the message type) into text and attachments.
func parseContent(msgType, content string) (string, []resource, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(content), &raw); err != nil {
		return "", nil, fmt.Errorf("content is not a JSON object: %w", err)
	}
	str := func(key string) (string, error) {
		v, ok := raw[key]
		if !ok {
			return "", nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", fmt.Errorf("%s: %w", key, err)
		}
		return s, nil
	}
	switch msgType {
	case "text":
		s, err := str("text")
		if err == nil && s == "" {
			err = errors.New("text message without text")
		}
		return s, nil, err
	case "post":
		return parsePost(raw)
	case "image":
		key, err := str("image_key")
		if err != nil || key == "" {
			return "", nil, errors.Join(err, errors.New("image without image_key"))
		}
		return "", []resource{{key: key, kind: "image", name: "image.jpg"}}, nil
	case "file", "audio", "media":
		key, err := str("file_key")
		if err != nil || key == "" {
			return "", nil, errors.Join(err, fmt.Errorf("%s without file_key", msgType))
		}
		name, _ := str("file_name")
		if name == "" {
			name = map[string]string{"audio": "audio.opus", "media": "video.mp4"}[msgType]
		}
		if name == "" {
			name = "file"
		}
		return "", []resource{{key: key, kind: "file", name: name}}, nil
	case "sticker":
		return "[sticker]", nil, nil
	}
	return fmt.Sprintf("[%s message]", msgType), nil, nil
}

// postElement is one inline element of a post (rich text) message.
type postElement struct {
	Tag      string `json:"tag"`
	Text     string `json:"text"`
	Href     string `json:"href"`
	UserID   string `json:"user_id"`
	UserName string `json:"user_name"`
	ImageKey string `json:"image_key"`
	FileKey  string `json:"file_key"`
	Language string `json:"language"`
	Emoji    string `json:"emoji_type"`
}

// parsePost flattens a post: {"title","content":[[elements]]}, or the
// same under a locale key ({"zh_cn":{…}}).
func parsePost(raw map[string]json.RawMessage) (string, []resource, error) {
	if _, ok := raw["content"]; !ok {
		for _, v := range raw { // a locale wrapper
			var inner map[string]json.RawMessage
			if json.Unmarshal(v, &inner) == nil {
				if _, ok := inner["content"]; ok {
					raw = inner
					break
				}
			}
		}
	}
	var title string
	if v, ok := raw["title"]; ok {
		if err := json.Unmarshal(v, &title); err != nil {
			return "", nil, fmt.Errorf("post title: %w", err)
		}
	}
	var lines [][]postElement
	if err := json.Unmarshal(raw["content"], &lines); err != nil {
		return "", nil, fmt.Errorf("post content: %w", err)
	}
	var out []string
	if title != "" {
		out = append(out, title)
	}
	var refs []resource
	for _, line := range lines {
		var b strings.Builder
		for _, e := range line {
			switch e.Tag {
			case "text", "md":
				b.WriteString(e.Text)
			case "a":
				if e.Href != "" && e.Href != e.Text {
					fmt.Fprintf(&b, "[%s](%s)", e.Text, e.Href)
				} else {
					b.WriteString(e.Text)
				}
			case "at":
				b.WriteString(e.UserID) // the @_user_N key, replaced later
			case "img":
				if e.ImageKey != "" {
					refs = append(refs, resource{key: e.ImageKey, kind: "image", name: "image.jpg"})
				}
			case "media":
				if e.FileKey != "" {
					refs = append(refs, resource{key: e.FileKey, kind: "file", name: "video.mp4"})
				}
			case "code_block":
				fmt.Fprintf(&b, "```%s\n%s\n```", strings.ToLower(e.Language), strings.TrimRight(e.Text, "\n"))
			case "emotion":
				fmt.Fprintf(&b, "[%s]", e.Emoji)
			case "hr":
				b.WriteString("---")
			}
		}
		out = append(out, b.String())
	}
	return strings.Join(out, "\n"), refs, nil
}

// download fetches a message's attachments into the media folder. Files
// from a sender the gate would refuse are not fetched; a failed download
// leaves a note in the text.
func (c *Channel) download(ctx context.Context, in channels.Inbox, m *bus.Inbound, refs []resource) {
	items := make([]media.Item, 0, len(refs))
	for _, r := range refs {
		items = append(items, media.Item{Name: r.name, Fetch: func(ctx context.Context) ([]byte, error) {
			return c.fetchResource(ctx, m.MessageID, r)
		}})
	}
	media.Collector{Dir: c.mediaDir, Max: c.cfg.MaxMediaBytes, Platform: "feishu", Log: c.log, Redact: c.redact.String}.
		Collect(ctx, m, channels.Admits(in, c.Name(), m.SenderID), items)
}

// fetchResource downloads one attachment with the tenant token.
func (c *Channel) fetchResource(ctx context.Context, messageID string, r resource) ([]byte, error) {
	tok, err := c.tokens.Get(ctx)
	if err != nil {
		return nil, err
	}
	u := c.cfg.base() + "/open-apis/im/v1/messages/" + url.PathEscape(messageID) + "/resources/" + url.PathEscape(r.key) + "?type=" + r.kind
	return media.Fetch(ctx, c.files, u, http.Header{"Authorization": {"Bearer " + tok}}, c.cfg.MaxMediaBytes)
}
