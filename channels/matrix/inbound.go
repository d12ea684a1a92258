package matrix

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

// handle turns one m.room.message into an Inbound and delivers it, if it
// is for the bot; malformed content is logged and skipped.
func (c *Channel) handle(ctx context.Context, in channels.Inbox, evt *event.Event) {
	if err := evt.Content.ParseRaw(evt.Type); err != nil && !errors.Is(err, event.ErrContentAlreadyParsed) {
		c.log.Warn("matrix: malformed message event skipped", "room", evt.RoomID, "event", evt.ID, "err", err)
		return
	}
	if evt.Content.AsMessage().MsgType == event.MsgVerificationRequest {
		// A device verification request, not words for the agent.
		c.verificationEvent(ctx, evt)
		return
	}
	msg, ok := c.toInbound(ctx, in, evt)
	if !ok {
		return
	}
	if !c.deliver(ctx, in, msg) {
		return
	}
	// The sender sees the bot read it once it is safely queued.
	if err := c.cli.MarkRead(ctx, evt.RoomID, evt.ID); err != nil && ctx.Err() == nil {
		c.log.Debug("matrix: read receipt failed", "err", c.redact.Error(err))
	}
}

// toInbound converts a message event. It reports false for what the bot
// should not answer: edits, notices (other bots), room messages not for it
// under the group policy, and empty ones.
func (c *Channel) toInbound(ctx context.Context, in channels.Inbox, evt *event.Event) (bus.Inbound, bool) {
	content := evt.Content.AsMessage()
	if content.MsgType == "" {
		c.log.Warn("matrix: message event without msgtype skipped", "room", evt.RoomID, "event", evt.ID)
		return bus.Inbound{}, false
	}
	rel := content.RelatesTo
	if rel != nil && rel.Type == event.RelReplace {
		return bus.Inbound{}, false // an edit of an earlier message
	}
	if content.MsgType == event.MsgNotice {
		return bus.Inbound{}, false // bots talk in notices; never answer them
	}
	room := evt.RoomID
	group := !c.isDirect(ctx, room)
	text := content.Body
	if content.MsgType.IsMedia() {
		text = content.GetCaption()
	}
	// Only the mention policy needs to know whether the bot is addressed
	// (it may ask the homeserver for the bot's display name).
	addressed := group && c.cfg.GroupPolicy == channels.GroupMention && c.addressed(ctx, evt, content)
	if !c.cfg.GroupPolicy.Admits(group, addressed, string(room), c.cfg.GroupAllowFrom) {
		c.log.Debug("matrix: room message not for the bot skipped", "room", room)
		return bus.Inbound{}, false
	}
	text = c.stripMention(text)
	if rel != nil && rel.InReplyTo != nil {
		text = stripReplyFallback(text)
	}
	meta := bus.Metadata{"event_id": string(evt.ID), "sender": string(evt.Sender)}
	m := bus.Inbound{
		Channel:    c.Name(),
		SenderID:   string(evt.Sender),
		ChatID:     string(room),
		MessageID:  string(evt.ID),
		IsGroup:    group,
		Metadata:   meta,
		ReceivedAt: time.Now(),
	}
	if root := rel.GetThreadParent(); root != "" {
		// A thread is its own conversation; replies go into it.
		meta["thread_root"] = string(root)
		m.ThreadID = string(root)
		m.SessionKey = bus.SessionKeyOf(c.Name(), string(room), "thread", string(root))
	}
	parts := []string{}
	if t := strings.TrimSpace(text); t != "" {
		parts = append(parts, t)
	}
	if content.MsgType.IsMedia() {
		md, note := c.download(ctx, in, evt, content)
		if md.Path != "" {
			m.Media = append(m.Media, md)
		}
		if note != "" {
			parts = append(parts, note)
		}
	}
	m.Content = strings.Join(parts, "\n")
	if m.Content == "" && len(m.Media) == 0 {
		return bus.Inbound{}, false
	}
	return m, true
}

// addressed reports whether a room message is for the bot: it mentions it
// (m.mentions, its id or name in the text) or replies to one of its
// messages.
func (c *Channel) addressed(ctx context.Context, evt *event.Event, content *event.MessageEventContent) bool {
	if content.Mentions != nil && slices.Contains(content.Mentions.UserIDs, c.me) {
		return true
	}
	body := strings.ToLower(content.Body + " " + content.FormattedBody)
	if strings.Contains(body, strings.ToLower(string(c.me))) || c.nameRE.MatchString(content.Body) {
		return true
	}
	if rel := content.RelatesTo; rel != nil && rel.InReplyTo != nil && rel.InReplyTo.EventID != "" {
		orig, err := c.cli.GetEvent(ctx, evt.RoomID, rel.InReplyTo.EventID)
		return err == nil && orig.Sender == c.me
	}
	return false
}

// stripMention removes a leading "@bot:server", "bot:" or "bot," so the
// agent sees what was asked.
func (c *Channel) stripMention(text string) string {
	t := strings.TrimSpace(text)
	for _, name := range []string{string(c.me), c.me.Localpart()} {
		if len(t) >= len(name) && strings.EqualFold(t[:len(name)], name) {
			rest := strings.TrimLeft(t[len(name):], ":, ")
			if rest != t[len(name):] || rest == "" {
				return rest
			}
		}
	}
	return t
}

// stripReplyFallback drops the "> <@user> quoted" lines clients put before
// a reply's text.
func stripReplyFallback(text string) string {
	lines := strings.Split(text, "\n")
	i := 0
	for i < len(lines) && strings.HasPrefix(lines[i], "> ") {
		i++
	}
	if i == 0 {
		return text
	}
	return strings.TrimLeft(strings.Join(lines[i:], "\n"), "\n")
}

// isDirect reports whether room is a direct chat: the bot and one other
// member. The count is cached until a member event arrives.
func (c *Channel) isDirect(ctx context.Context, room id.RoomID) bool {
	c.mu.Lock()
	n, ok := c.members[room]
	c.mu.Unlock()
	if !ok {
		resp, err := c.cli.JoinedMembers(ctx, room)
		if err != nil {
			c.log.Warn("matrix: room members unknown; treating the room as a group", "room", room, "err", c.redact.Error(err))
			return false
		}
		n = len(resp.Joined)
		c.mu.Lock()
		c.members[room] = n
		c.mu.Unlock()
	}
	return n <= 2
}

func (c *Channel) forgetMembers(room id.RoomID) {
	c.mu.Lock()
	delete(c.members, room)
	c.mu.Unlock()
}

// download fetches an attachment into the media folder: only for senders
// the gate admits, at most maxMediaBytes. The note tells the agent what
// happened when there is no file.
func (c *Channel) download(ctx context.Context, in channels.Inbox, evt *event.Event, content *event.MessageEventContent) (bus.Media, string) {
	name := content.GetFileName()
	if name == "" {
		name = string(content.MsgType)
	}
	label := "attachment " + name
	if c.mediaDir == "" || !channels.Admits(in, c.Name(), string(evt.Sender)) {
		return bus.Media{}, "[" + label + ": not downloaded]"
	}
	var size int64
	mime := ""
	if content.Info != nil {
		size, mime = int64(content.Info.Size), content.Info.MimeType
	}
	tooBig := media.TooLarge(label, size, c.cfg.MaxMediaBytes)
	if size > c.cfg.MaxMediaBytes {
		return bus.Media{}, tooBig
	}
	mxc := content.URL
	if content.File != nil {
		// An attachment of an encrypted room: AES-CTR with the key in the
		// (already decrypted) event.
		mxc = content.File.URL
	}
	uri, err := mxc.Parse()
	if err != nil || uri.IsEmpty() {
		c.log.Warn("matrix: attachment without a valid mxc URL skipped", "event", evt.ID)
		return bus.Media{}, "[" + label + ": no file]"
	}
	resp, err := c.cli.Download(ctx, uri)
	if err != nil {
		c.log.Warn("matrix: attachment download failed", "event", evt.ID, "err", c.redact.Error(err))
		return bus.Media{}, "[" + label + ": download failed]"
	}
	defer resp.Body.Close()
	data, err := media.ReadCapped(resp.Body, c.cfg.MaxMediaBytes)
	if errors.Is(err, media.ErrTooLarge) {
		return bus.Media{}, tooBig
	}
	if err != nil {
		c.log.Warn("matrix: attachment download failed", "event", evt.ID, "err", c.redact.Error(err))
		return bus.Media{}, "[" + label + ": download failed]"
	}
	if content.File != nil {
		if err := content.File.DecryptInPlace(data); err != nil {
			c.log.Warn("matrix: an encrypted attachment could not be decrypted", "event", evt.ID, "err", err)
			return bus.Media{}, "[" + label + ": could not be decrypted]"
		}
	}
	if mime == "" {
		mime = http.DetectContentType(data)
	}
	file, err := media.Save(c.mediaDir, fmt.Sprintf("%s_%s%s", evt.RoomID, evt.ID, media.Ext(name, "", mime)), data)
	if err != nil {
		c.log.Warn("matrix: saving an attachment failed", "err", err)
		return bus.Media{}, "[" + label + ": could not be saved]"
	}
	return bus.Media{Path: file, MIMEType: mime, Name: name, Size: int64(len(data))}, ""
}

// deliver hands m to the inbox, retrying a failure other than a denial a
// few times. It reports whether the message was taken.
func (c *Channel) deliver(ctx context.Context, in channels.Inbox, m bus.Inbound) bool {
	return channels.DeliverRetrying(ctx, in, m, c.log, c.backoffMin, c.backoffMax) == nil
}
