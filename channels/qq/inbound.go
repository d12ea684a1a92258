package qq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

// Message events.
const (
	evC2C      = "C2C_MESSAGE_CREATE"
	evGroupAt  = "GROUP_AT_MESSAGE_CREATE"
	evGroupAll = "GROUP_MESSAGE_CREATE" // only for bots allowed every group message
	evDirect   = "DIRECT_MESSAGE_CREATE"
)

// Chat id prefixes (a single chat is the bare user openid).
const (
	groupPrefix = "group:"
	dmsPrefix   = "dms:"
)

// message is the d of a message event; which fields are set depends on
// the event.
type message struct {
	ID        string `json:"id"`
	Content   string `json:"content"`
	Timestamp string `json:"timestamp"`
	Author    struct {
		ID           string `json:"id"`
		UserOpenID   string `json:"user_openid"`
		MemberOpenID string `json:"member_openid"`
		Username     string `json:"username"`
		Bot          bool   `json:"bot"`
	} `json:"author"`
	GroupOpenID string       `json:"group_openid"`
	GuildID     string       `json:"guild_id"`
	ChannelID   string       `json:"channel_id"`
	Attachments []attachment `json:"attachments"`
}

type attachment struct {
	ContentType string  `json:"content_type"`
	Filename    string  `json:"filename"`
	URL         string  `json:"url"`
	Size        flexInt `json:"size"`
}

// flexInt is a number QQ sends as a JSON number or a string.
type flexInt int64

func (n *flexInt) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*n = 0
		return nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("not a number: %s", b)
	}
	*n = flexInt(v)
	return nil
}

// outcome is what became of a dispatch.
type outcome int

const (
	// done: delivered, refused by the gate, or not for the agent.
	done outcome = iota
	// retry: the gateway could not take it (DeliverRetrying gave up); QQ
	// should deliver it again.
	retry
	// stopped: ctx ended first.
	stopped
)

// handle processes one dispatch. Unless it is done, its seq is not
// reported, so that a later Resume has QQ deliver it again.
func (c *Channel) handle(ctx context.Context, in channels.Inbox, ev event) outcome {
	switch ev.kind {
	case evC2C, evGroupAt, evGroupAll, evDirect:
	default:
		c.log.Debug("qq: event ignored", "event", ev.kind)
		return done
	}
	var m message
	if err := json.Unmarshal(ev.data, &m); err != nil {
		c.log.Warn("qq: malformed message event skipped", "event", ev.kind, "seq", ev.seq, "err", err)
		return done
	}
	// GROUP_AT_MESSAGE_CREATE is how QQ tells the bot was @-mentioned.
	group := ev.kind == evGroupAt || ev.kind == evGroupAll
	if !c.cfg.GroupPolicy.Admits(group, ev.kind == evGroupAt, m.GroupOpenID, c.cfg.GroupAllowFrom) {
		return done
	}
	msg, ok := c.toInbound(ev.kind, &m)
	if !ok {
		return done
	}
	if c.dedup.Seen(msg.MessageID) {
		c.log.Debug("qq: message seen before skipped", "message_id", msg.MessageID)
		return done
	}
	c.replies.received(msg.MessageID, msg.ChatID, msg.ReceivedAt)
	if len(msg.Media) > 0 {
		c.download(ctx, in, &msg)
	}
	switch err := channels.DeliverRetrying(ctx, in, msg, c.log, c.backoffMin, c.backoffMax); {
	case errors.Is(err, channels.ErrDenied):
		return done
	case err != nil && ctx.Err() != nil:
		c.dedup.Forget(msg.MessageID)
		return stopped
	case err != nil:
		c.log.Warn("qq: the gateway did not take a message; QQ delivers it again after a resume", "message_id", msg.MessageID, "seq", ev.seq, "err", err)
		c.dedup.Forget(msg.MessageID) // the redelivery must be taken
		return retry
	}
	if c.cfg.AckMessage != "" {
		ack := bus.Outbound{Channel: c.Name(), ChatID: msg.ChatID, Kind: bus.KindMessage, Content: c.cfg.AckMessage, ReplyTo: msg.MessageID}
		if _, err := c.Send(ctx, ack); err != nil {
			c.log.Warn("qq: sending ackMessage failed", "chat_id", msg.ChatID, "err", c.redact.Error(err))
		}
	}
	return done
}

// toInbound converts a message event. It reports false for what the bot
// should not answer: bots' messages (its own included) and malformed
// events (logged).
func (c *Channel) toInbound(kind string, m *message) (bus.Inbound, bool) {
	var sender, chat string
	group := false
	switch kind {
	case evC2C:
		sender, chat = m.Author.UserOpenID, m.Author.UserOpenID
	case evGroupAt, evGroupAll:
		sender, group = m.Author.MemberOpenID, true
		if m.GroupOpenID != "" {
			chat = groupPrefix + m.GroupOpenID
		}
	case evDirect:
		sender = m.Author.ID
		if m.GuildID != "" {
			chat = dmsPrefix + m.GuildID
		}
	}
	if m.ID == "" || sender == "" || chat == "" {
		c.log.Warn("qq: message without id, author or chat skipped", "event", kind, "message_id", m.ID)
		return bus.Inbound{}, false
	}
	c.mu.Lock()
	self := c.botID
	c.mu.Unlock()
	if m.Author.Bot || (self != "" && sender == self) {
		return bus.Inbound{}, false
	}
	meta := bus.Metadata{"message_id": m.ID, "event": kind}
	if m.Timestamp != "" {
		meta["timestamp"] = m.Timestamp
	}
	if m.GroupOpenID != "" {
		meta["group_openid"] = m.GroupOpenID
	}
	if m.GuildID != "" {
		meta["guild_id"] = m.GuildID
	}
	if m.Author.Username != "" {
		meta["username"] = m.Author.Username
	}
	var parts []string
	if t := stripMentions(m.Content); t != "" {
		parts = append(parts, t)
	}
	var files []bus.Media
	for _, a := range m.Attachments {
		u := attachmentURL(a.URL)
		if u == "" {
			continue
		}
		if int64(a.Size) > c.cfg.MaxMediaBytes {
			parts = append(parts, media.TooLarge("attachment "+a.Filename, int64(a.Size), c.cfg.MaxMediaBytes))
			continue
		}
		files = append(files, bus.Media{URL: u, MIMEType: a.ContentType, Name: a.Filename, Size: int64(a.Size)})
	}
	content := strings.Join(parts, "\n")
	if content == "" && len(files) == 0 {
		c.log.Debug("qq: empty message skipped", "message_id", m.ID)
		return bus.Inbound{}, false
	}
	return bus.Inbound{
		Channel:    c.Name(),
		SenderID:   sender,
		ChatID:     chat,
		MessageID:  m.ID,
		Content:    content,
		Media:      files,
		IsGroup:    group,
		Metadata:   meta,
		ReceivedAt: time.Now(),
	}, true
}

// mentionRe matches a leading <@id> or <@!id> (guild messages keep them;
// group @-messages arrive with the mention already removed).
var mentionRe = regexp.MustCompile(`^(<@!?[^>\s]+>\s*)+`)

func stripMentions(s string) string {
	return strings.TrimSpace(mentionRe.ReplaceAllString(strings.TrimSpace(s), ""))
}

// attachmentURL makes QQ's attachment address absolute: it often comes
// without a scheme ("gchat.qpic.cn/…").
func attachmentURL(u string) string {
	u = strings.TrimSpace(u)
	switch {
	case u == "":
		return ""
	case strings.HasPrefix(u, "http://"), strings.HasPrefix(u, "https://"):
		return u
	case strings.HasPrefix(u, "//"):
		return "https:" + u
	}
	return "https://" + u
}

// download fetches the message's attachments into the media folder, so the
// agent gets local files. Files from a sender the gate would refuse are not
// fetched; a failed download leaves a note in the text instead.
func (c *Channel) download(ctx context.Context, in channels.Inbox, m *bus.Inbound) {
	items := media.TakeURLs(m, c.http, c.cfg.MaxMediaBytes)
	media.Collector{Dir: c.mediaDir, Max: c.cfg.MaxMediaBytes, Platform: "qq", Log: c.log, Redact: c.redact.String}.
		Collect(ctx, m, channels.Admits(in, c.Name(), m.SenderID), items)
}
