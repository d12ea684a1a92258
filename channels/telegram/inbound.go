package telegram

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

// handleUpdate turns one update into an Inbound and delivers it; updates
// that are not messages for the bot are skipped. It returns nil when the
// update may be acknowledged (taken, skipped, or from a denied sender),
// and otherwise why the gateway did not take it: the update must then
// stay unacknowledged. With retry, delivery is retried with backoff
// (channels.DeliverRetrying); without, it is tried once.
func (c *Channel) handleUpdate(ctx context.Context, u *models.Update, retry bool) error {
	if u.CallbackQuery != nil {
		return c.handleCallback(ctx, u.CallbackQuery, retry)
	}
	msg := u.Message
	if msg == nil {
		msg = u.ChannelPost
	}
	if msg == nil {
		c.log.Debug("telegram: update without a message skipped", "update_id", u.ID)
		return nil
	}
	in, ok := c.toInbound(ctx, msg)
	if !ok {
		return nil
	}
	return c.deliver(ctx, in, retry)
}

// errNotRunning is deliver's answer while Run is not running.
var errNotRunning = errors.New("telegram: the channel is not running")

// deliver hands in to the inbox (see handleUpdate).
func (c *Channel) deliver(ctx context.Context, in bus.Inbound, retry bool) error {
	c.mu.Lock()
	inbox := c.inbox
	c.mu.Unlock()
	if inbox == nil {
		return errNotRunning
	}
	watched := channels.InboxFunc(func(ctx context.Context, m bus.Inbound) error {
		err := inbox.Deliver(ctx, m)
		c.noteDelivery(ctx, err)
		return err
	})
	var err error
	if retry {
		err = channels.DeliverRetrying(ctx, watched, in, c.log, c.backoffMin, c.backoffMax)
	} else {
		err = watched.Deliver(ctx, in)
	}
	if errors.Is(err, channels.ErrDenied) {
		return nil // acknowledged, never retried
	}
	return err
}

// noteDelivery keeps Health honest about the gateway's side of the
// channel: while the gateway does not take messages (a full disk, the
// cluster bus down) updates pile up unacknowledged at Telegram although
// Telegram is reachable, so the channel reports reconnecting with why,
// and connected again once a message is taken.
func (c *Channel) noteDelivery(ctx context.Context, err error) {
	switch {
	case err == nil || errors.Is(err, channels.ErrDenied):
		if c.refusing.CompareAndSwap(true, false) {
			c.health.Set(channels.StateConnected, "")
		}
	case ctx.Err() == nil:
		c.refusing.Store(true)
		c.health.Set(channels.StateReconnecting, "the gateway is not taking messages: "+c.redact.Error(err))
	}
}

// toInbound converts a message. It reports false for messages the bot
// should not answer (group policy, another bot's command, service
// messages) and for malformed ones (logged).
func (c *Channel) toInbound(ctx context.Context, msg *models.Message) (bus.Inbound, bool) {
	me := c.self()
	if me == nil {
		me = &models.User{}
	}
	chatID := strconv.FormatInt(msg.Chat.ID, 10)
	var senderID string
	switch {
	case msg.From != nil:
		senderID = userID(msg.From.ID, msg.From.Username)
	case msg.SenderChat != nil:
		senderID = userID(msg.SenderChat.ID, msg.SenderChat.Username)
	default:
		c.log.Warn("telegram: message without a sender skipped", "chat_id", chatID, "message_id", msg.ID)
		return bus.Inbound{}, false
	}
	if msg.Chat.ID == 0 {
		c.log.Warn("telegram: message without a chat skipped", "message_id", msg.ID)
		return bus.Inbound{}, false
	}
	isGroup := msg.Chat.Type != models.ChatTypePrivate

	text, entities := msg.Text, msg.Entities
	if text == "" {
		text, entities = msg.Caption, msg.CaptionEntities
	}
	text, addressed, forOther := c.readEntities(text, entities, me)
	if forOther {
		c.log.Debug("telegram: command for another bot skipped", "chat_id", chatID)
		return bus.Inbound{}, false
	}
	if reply := msg.ReplyToMessage; reply != nil && reply.ForumTopicCreated == nil && reply.From != nil && me.ID != 0 && reply.From.ID == me.ID {
		addressed = true
	}
	if !c.cfg.GroupPolicy.Admits(isGroup, addressed, chatID, c.cfg.GroupAllowFrom) {
		c.log.Debug("telegram: group message not for the bot skipped", "chat_id", chatID)
		return bus.Inbound{}, false
	}

	meta := bus.Metadata{
		"message_id": strconv.Itoa(msg.ID),
		"chat_type":  string(msg.Chat.Type),
	}
	if msg.From != nil {
		meta["user_id"] = strconv.FormatInt(msg.From.ID, 10)
		if msg.From.Username != "" {
			meta["username"] = msg.From.Username
		}
		if msg.From.FirstName != "" {
			meta["first_name"] = msg.From.FirstName
		}
	}
	if msg.Chat.Title != "" {
		meta["chat_title"] = msg.Chat.Title
	}
	in := bus.Inbound{
		Channel:    c.Name(),
		SenderID:   senderID,
		ChatID:     chatID,
		MessageID:  strconv.Itoa(msg.ID),
		IsGroup:    isGroup,
		Metadata:   meta,
		ReceivedAt: time.Now(),
	}
	if msg.IsTopicMessage && msg.MessageThreadID != 0 {
		// Each forum topic is its own conversation.
		meta["message_thread_id"] = strconv.Itoa(msg.MessageThreadID)
		in.SessionKey = bus.SessionKeyOf(c.Name(), chatID, "topic", strconv.Itoa(msg.MessageThreadID))
		in.ThreadID = strconv.Itoa(msg.MessageThreadID)
	}
	if msg.From != nil && msg.From.IsBot {
		in.FromBot = true
	}

	parts := []string{}
	if t := strings.TrimSpace(text); t != "" {
		parts = append(parts, t)
	}
	c.mu.Lock()
	inbox := c.inbox
	c.mu.Unlock()
	if inbox == nil || channels.Admits(inbox, c.Name(), senderID) {
		// Files from senders the gate will turn away are not fetched.
		media, notes := c.attachments(ctx, msg)
		parts = append(parts, notes...)
		in.Media = media
		// The user spoke: a voice reply is in order when configured.
		in.Voice = msg.Voice != nil
	} else if hasAttachment(msg) {
		parts = append(parts, "[attachment not downloaded: sender not allowed]")
	}
	in.Content = strings.Join(parts, "\n")
	if in.Content == "" && len(in.Media) == 0 {
		c.log.Debug("telegram: message without content skipped", "chat_id", chatID, "message_id", msg.ID)
		return bus.Inbound{}, false
	}
	return in, true
}

// userID is the sender id format shared with Python nanobot: "id|username",
// or just "id" for users without a username.
func userID(id int64, username string) string {
	s := strconv.FormatInt(id, 10)
	if username != "" {
		s += "|" + username
	}
	return s
}

// readEntities strips "@botname" from commands and a leading mention,
// and reports whether the message addressed the bot (mention, command) or
// is a command for another bot.
func (c *Channel) readEntities(text string, entities []models.MessageEntity, me *models.User) (out string, addressed, forOther bool) {
	u := utf16.Encode([]rune(text))
	type cut struct{ from, to int }
	var cuts []cut
	for _, e := range entities {
		if e.Offset < 0 || e.Length <= 0 || e.Offset+e.Length > len(u) {
			continue
		}
		seg := string(utf16.Decode(u[e.Offset : e.Offset+e.Length]))
		switch e.Type {
		case models.MessageEntityTypeBotCommand:
			if e.Offset != 0 {
				continue
			}
			addressed = true
			if _, name, ok := strings.Cut(seg, "@"); ok {
				if me.Username == "" || !strings.EqualFold(name, me.Username) {
					return text, false, true
				}
				at := e.Offset + len(utf16.Encode([]rune(seg[:strings.IndexByte(seg, '@')])))
				cuts = append(cuts, cut{at, e.Offset + e.Length})
			}
		case models.MessageEntityTypeMention:
			if me.Username != "" && strings.EqualFold(seg, "@"+me.Username) {
				addressed = true
				// "@bot do this" is "do this"; a mention inside a sentence
				// stays, it is part of it.
				if strings.TrimSpace(string(utf16.Decode(u[:e.Offset]))) == "" {
					cuts = append(cuts, cut{e.Offset, e.Offset + e.Length})
				}
			}
		case models.MessageEntityTypeTextMention:
			if e.User != nil && me.ID != 0 && e.User.ID == me.ID {
				addressed = true
			}
		}
	}
	if len(cuts) == 0 {
		return text, addressed, false
	}
	var b []uint16
	pos := 0
	for _, k := range cuts {
		if k.from < pos {
			continue
		}
		b = append(b, u[pos:k.from]...)
		pos = k.to
	}
	b = append(b, u[pos:]...)
	return strings.Join(strings.Fields(string(utf16.Decode(b))), " "), addressed, false
}

// hasAttachment reports whether msg carries a file attachments would fetch.
func hasAttachment(msg *models.Message) bool {
	return len(msg.Photo) > 0 || msg.Document != nil || msg.Voice != nil || msg.Audio != nil || msg.Video != nil || msg.Sticker != nil
}

// attachments downloads the message's files. Each gives a note for the
// text (where it was saved, or why it was not).
func (c *Channel) attachments(ctx context.Context, msg *models.Message) ([]bus.Media, []string) {
	var media []bus.Media
	var notes []string
	add := func(kind, fileID, unique, name, mimeType string, size int64) (bus.Media, bool) {
		m, note := c.download(ctx, msg, kind, fileID, unique, name, mimeType, size)
		if m.Path != "" {
			media = append(media, m)
		}
		if note != "" && kind != "voice" {
			notes = append(notes, note)
		}
		return m, m.Path != ""
	}
	if len(msg.Photo) > 0 {
		best := msg.Photo[0]
		for _, p := range msg.Photo[1:] {
			if p.Width*p.Height > best.Width*best.Height || (p.Width*p.Height == best.Width*best.Height && p.FileSize > best.FileSize) {
				best = p
			}
		}
		add("photo", best.FileID, best.FileUniqueID, "", "image/jpeg", int64(best.FileSize))
	}
	if d := msg.Document; d != nil {
		add("file", d.FileID, d.FileUniqueID, d.FileName, d.MimeType, d.FileSize)
	}
	if a := msg.Audio; a != nil {
		add("audio", a.FileID, a.FileUniqueID, a.FileName, a.MimeType, a.FileSize)
	}
	if v := msg.Video; v != nil {
		add("video", v.FileID, v.FileUniqueID, v.FileName, v.MimeType, v.FileSize)
	}
	if v := msg.Voice; v != nil {
		mt := v.MimeType
		if mt == "" {
			mt = "audio/ogg"
		}
		m, ok := add("voice", v.FileID, v.FileUniqueID, "voice.ogg", mt, v.FileSize)
		notes = append(notes, voiceNote(m, ok, v.FileSize))
	}
	if s := msg.Sticker; s != nil {
		notes = append(notes, "[sticker "+s.Emoji+"]")
	}
	return media, notes
}

// voiceNote is the text standing for a voice message: where the audio is
// (the agent adds its transcription when that is configured), or why it
// is not there.
func voiceNote(m bus.Media, ok bool, size int64) string {
	if !ok {
		return fmt.Sprintf("[voice message: not downloaded (%s)]", media.Size(size))
	}
	return "[voice message: " + m.Path + "]"
}

// download fetches one file into the media folder. Over maxMediaBytes (as
// Telegram reports it, or as it turns out) it is not kept.
func (c *Channel) download(ctx context.Context, msg *models.Message, kind, fileID, unique, name, mimeType string, size int64) (bus.Media, string) {
	label := kind
	if name != "" {
		label += " " + name
	}
	limit := c.cfg.MaxMediaBytes
	tooBig := media.TooLarge(label, size, limit)
	if size > limit {
		return bus.Media{}, tooBig
	}
	if c.mediaDir == "" {
		return bus.Media{}, "[" + label + ": not downloaded (no media folder)]"
	}
	f, err := c.api.GetFile(ctx, &bot.GetFileParams{FileID: fileID})
	if err != nil {
		c.log.Warn("telegram: getFile failed", "kind", kind, "err", c.redact.Error(err))
		return bus.Media{}, "[" + label + ": download failed]"
	}
	if f.FileSize > limit {
		return bus.Media{}, tooBig
	}
	data, err := media.Fetch(ctx, c.files, c.api.FileDownloadLink(f), nil, limit)
	if errors.Is(err, media.ErrTooLarge) {
		return bus.Media{}, tooBig
	}
	if err != nil {
		c.log.Warn("telegram: file download failed", "kind", kind, "err", c.redact.Error(err))
		return bus.Media{}, "[" + label + ": download failed]"
	}
	ext := media.Ext(name, f.FilePath, mimeType)
	if mimeType == "" {
		mimeType = mime.TypeByExtension(ext)
	}
	if unique == "" {
		unique = fileID
	}
	file, err := media.Save(c.mediaDir, fmt.Sprintf("%d_%d_%s%s", msg.Chat.ID, msg.ID, unique, ext), data) // Save makes the name safe
	if err != nil {
		c.log.Warn("telegram: saving a download failed", "err", err)
		return bus.Media{}, "[" + label + ": could not be saved]"
	}
	return bus.Media{Path: file, MIMEType: mimeType, Name: name, Size: int64(len(data))}, "[" + label + ": " + file + "]"
}
