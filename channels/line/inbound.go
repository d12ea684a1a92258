// Inbound: LINE's webhook (signature, events, reply tokens) and the
// messages it brings.

package line

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/line/line-bot-sdk-go/v8/linebot/webhook"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

// maxBodyBytes bounds one webhook request.
const maxBodyBytes = 4 << 20

// WebhookHandler implements channels.WebhookHandler: it takes LINE's
// webhook requests. A wrong signature gets 400 before anything is parsed;
// while Run is not running the answer is 503; events LINE sent in a shape
// the channel cannot read are logged and skipped (200, so LINE does not
// send them again); a message the gateway could not take makes the answer
// 500, so LINE redelivers the request when redelivery is on.
func (c *Channel) WebhookHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !channels.AllowPost(w, r) {
			return
		}
		body, ok := channels.ReadBody(w, r, maxBodyBytes)
		if !ok {
			return
		}
		if !webhook.ValidateSignature(c.cfg.ChannelSecret, r.Header.Get("X-Line-Signature"), body) {
			c.log.Warn("line: webhook request with a bad signature rejected", "remote", r.RemoteAddr)
			http.Error(w, "bad signature", http.StatusBadRequest)
			return
		}
		in, ok := channels.Serving(w, &c.mu, &c.inbox)
		if !ok {
			return
		}
		var req struct {
			Destination string            `json:"destination"`
			Events      []json.RawMessage `json:"events"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			c.log.Warn("line: unreadable webhook body skipped", "bytes", len(body), "err", err)
			w.WriteHeader(http.StatusOK)
			return
		}
		failed := false
		for _, raw := range req.Events {
			ev, err := webhook.UnmarshalEvent(raw)
			if err != nil {
				c.log.Warn("line: unreadable webhook event skipped", "err", err)
				continue
			}
			if err := c.event(r.Context(), in, ev); err != nil {
				failed = true
			}
		}
		if r.Context().Err() != nil {
			return
		}
		if failed {
			http.Error(w, "the gateway could not take a message", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// event handles one webhook event; it returns an error only when the
// gateway could not take its message.
func (c *Channel) event(ctx context.Context, in channels.Inbox, ev webhook.EventInterface) error {
	switch e := ev.(type) {
	case webhook.MessageEvent:
		return c.message(ctx, in, e)
	case webhook.FollowEvent, webhook.JoinEvent:
		c.log.Info("line: added to a chat", "event", ev.GetType())
	default:
		c.log.Debug("line: webhook event ignored", "event", ev.GetType())
	}
	return nil
}

// chat reads an event's source: the chat id, the sender and whether it is
// a group or room.
func chat(src webhook.SourceInterface) (chatID, sender string, group bool) {
	switch s := src.(type) {
	case webhook.UserSource:
		return s.UserId, s.UserId, false
	case webhook.GroupSource:
		return s.GroupId, s.UserId, true
	case webhook.RoomSource:
		return s.RoomId, s.UserId, true
	}
	return "", "", false
}

func (c *Channel) message(ctx context.Context, in channels.Inbox, e webhook.MessageEvent) error {
	chatID, sender, group := chat(e.Source)
	if chatID == "" || sender == "" || e.Message == nil {
		c.log.Warn("line: message event without chat, sender or message skipped", "webhook_event_id", e.WebhookEventId)
		return nil
	}
	m := bus.Inbound{Channel: c.Name(), SenderID: sender, ChatID: chatID, IsGroup: group, ReceivedAt: time.Now(),
		Metadata: bus.Metadata{"webhook_event_id": e.WebhookEventId}}
	var item *media.Item
	addressed := false
	switch msg := e.Message.(type) {
	case webhook.TextMessageContent:
		m.MessageID = msg.Id
		m.Content, addressed = c.stripMentions(msg.Text, msg.Mention)
		if msg.QuoteToken != "" {
			m.Metadata["quote_token"] = msg.QuoteToken
		}
	case webhook.ImageMessageContent:
		m.MessageID, item = msg.Id, c.content(msg.Id, "image.jpg")
	case webhook.VideoMessageContent:
		m.MessageID, item = msg.Id, c.content(msg.Id, "video.mp4")
	case webhook.AudioMessageContent:
		m.MessageID, item = msg.Id, c.content(msg.Id, "audio.m4a")
	case webhook.FileMessageContent:
		m.MessageID, item = msg.Id, c.content(msg.Id, msg.FileName)
	case webhook.StickerMessageContent:
		m.MessageID, m.Content = msg.Id, "[sticker]"
	case webhook.LocationMessageContent:
		m.MessageID, m.Content = msg.Id, strings.TrimSpace(fmt.Sprintf("[location %s %s (%f, %f)]", msg.Title, msg.Address, msg.Latitude, msg.Longitude))
	default:
		c.log.Debug("line: message type not handled", "type", e.Message.GetType())
		return nil
	}
	if m.MessageID == "" {
		c.log.Warn("line: message without id skipped", "webhook_event_id", e.WebhookEventId)
		return nil
	}
	if group && !c.cfg.GroupPolicy.Admits(true, addressed, chatID, c.cfg.GroupAllowFrom) {
		c.log.Debug("line: group message not for the bot skipped", "chat_id", chatID)
		return nil
	}
	key := e.WebhookEventId
	if key == "" {
		key = m.MessageID
	}
	if c.dedup.Seen(key) {
		return nil
	}
	if e.ReplyToken != "" {
		m.Metadata["reply_token"] = e.ReplyToken
		c.remember(e.ReplyToken)
	}
	if item != nil {
		media.Collector{Dir: c.mediaDir, Max: c.cfg.MaxMediaBytes, Platform: "line", Log: c.log, Redact: c.redact.String}.
			Collect(ctx, &m, channels.Admits(in, c.Name(), m.SenderID), []media.Item{*item})
	}
	m.Content = strings.TrimSpace(m.Content)
	if m.Content == "" && len(m.Media) == 0 {
		return nil
	}
	err := in.Deliver(ctx, m)
	if err == nil || errors.Is(err, channels.ErrDenied) {
		return nil
	}
	c.log.Warn("line: the gateway did not take a message; LINE may redeliver it", "chat_id", chatID, "message_id", m.MessageID, "err", err)
	c.dedup.Forget(key)
	return err
}

// stripMentions removes the bot's @mention from text and reports whether
// the bot was mentioned. Mention positions are in UTF-16 units.
func (c *Channel) stripMentions(text string, mention *webhook.Mention) (string, bool) {
	if mention == nil {
		return text, false
	}
	c.mu.Lock()
	bot := c.botID
	c.mu.Unlock()
	units := utf16.Encode([]rune(text))
	addressed := false
	// Remove from the end, so earlier positions stay valid.
	for i := len(mention.Mentionees) - 1; i >= 0; i-- {
		u, ok := mention.Mentionees[i].(webhook.UserMentionee)
		if !ok || !(u.IsSelf || (bot != "" && u.UserId == bot)) {
			continue
		}
		addressed = true
		start, end := int(u.Index), int(u.Index+u.Length)
		if start < 0 || end > len(units) || start > end {
			continue
		}
		units = append(units[:start:start], units[end:]...)
	}
	return string(utf16.Decode(units)), addressed
}

// content is a message's file, downloaded from the content endpoint.
func (c *Channel) content(id, name string) *media.Item {
	return &media.Item{Name: name, Fetch: func(ctx context.Context) ([]byte, error) {
		api, err := c.blob(ctx)
		if err != nil {
			return nil, err
		}
		res, _, err := api.GetMessageContentWithHttpInfo(id)
		if err != nil {
			return nil, c.apiError("GET content", res, err)
		}
		defer res.Body.Close()
		if res.ContentLength > c.cfg.MaxMediaBytes {
			return nil, media.ErrTooLarge
		}
		return media.ReadCapped(res.Body, c.cfg.MaxMediaBytes)
	}}
}

// remember records a fresh reply token and forgets expired ones.
func (c *Channel) remember(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for t, w := range c.replies {
		if now.Sub(w.at) > c.replyTTL {
			delete(c.replies, t)
		}
	}
	c.replies[token] = replyWindow{at: now}
}

// claim takes a reply token for one use, if it is still fresh.
func (c *Channel) claim(token string) bool {
	if token == "" {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.replies[token]
	if !ok {
		return false
	}
	delete(c.replies, token)
	return time.Since(w.at) <= c.replyTTL
}
