package telegram

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// Send implements channels.Channel: one message (the dispatcher already
// split it to MessageLimit), as HTML, in the message's forum topic, quoting
// the user's message when replyToMessage is on. Markup Telegram refuses
// is sent again as plain text. With richMessages on, a message with a
// table that is never edited goes as a rich message (rich.go).
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	chat, err := chatID(m.ChatID)
	if err != nil {
		return channels.MessageRef{}, err
	}
	if strings.TrimSpace(m.Content) == "" {
		return channels.MessageRef{}, channels.Permanentf("telegram: send to chat %s: empty message", m.ChatID)
	}
	if c.richFor(m) {
		if r, sent, err := c.sendRich(ctx, m, chat); sent || err != nil {
			return r, err
		}
	}
	p := &bot.SendMessageParams{
		ChatID:          chat,
		MessageThreadID: replyThread(m),
		Text:            toHTML(m.Content),
		ParseMode:       models.ParseModeHTML,
		ReplyParameters: c.replyTo(m),
		ReplyMarkup:     keyboard(m.Actions),
	}
	msg, err := c.api.SendMessage(ctx, p)
	if fallbackToPlain(err) {
		c.log.Warn("telegram: message refused as HTML; sending plain text", "chat_id", m.ChatID, "err", err)
		p.Text, p.ParseMode = m.Content, ""
		msg, err = c.api.SendMessage(ctx, p)
	}
	if err != nil {
		return channels.MessageRef{}, c.sendError(fmt.Sprintf("send to chat %s", m.ChatID), err)
	}
	return ref(m.ChatID, msg), nil
}

// Edit implements channels.Editor (streaming): the message shows m.Content.
func (c *Channel) Edit(ctx context.Context, r channels.MessageRef, m bus.Outbound) error {
	chat, err := chatID(r.ChatID)
	if err != nil {
		return err
	}
	id, err := strconv.Atoi(r.MessageID)
	if err != nil {
		return channels.Permanentf("telegram: edit: message id %q: %w", r.MessageID, err)
	}
	if strings.TrimSpace(m.Content) == "" {
		return nil
	}
	p := &bot.EditMessageTextParams{ChatID: chat, MessageID: id, Text: toHTML(m.Content), ParseMode: models.ParseModeHTML}
	_, err = c.api.EditMessageText(ctx, p)
	if fallbackToPlain(err) {
		p.Text, p.ParseMode = m.Content, ""
		_, err = c.api.EditMessageText(ctx, p)
	}
	if err != nil && strings.Contains(err.Error(), "message is not modified") {
		return nil // the message already shows this text
	}
	if err != nil {
		return c.sendError(fmt.Sprintf("edit message %s in chat %s", r.MessageID, r.ChatID), err)
	}
	return nil
}

// Typing implements channels.Typer: "typing…" for about five seconds.
func (c *Channel) Typing(ctx context.Context, chatIDText string, meta bus.Metadata) error {
	chat, err := chatID(chatIDText)
	if err != nil {
		return err
	}
	_, err = c.api.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: chat, MessageThreadID: threadID(meta), Action: models.ChatActionTyping})
	if err != nil {
		return c.sendError("typing in chat "+chatIDText, err)
	}
	return nil
}

// captionLimit is Telegram's limit on a media caption.
const captionLimit = 1024

// SendMedia implements channels.MediaSender: each file as a photo (images
// up to 10 MB) or a document, the text as the first file's caption when it
// fits, else as a message before the files. It returns the first message.
func (c *Channel) SendMedia(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	chat, err := chatID(m.ChatID)
	if err != nil {
		return channels.MessageRef{}, err
	}
	var parts channels.Parts
	caption := m.Content
	if utf8.RuneCountInString(caption) > captionLimit {
		text := m
		text.Media = nil
		r, err := c.Send(ctx, text)
		if err != nil {
			return parts.Fail(err)
		}
		parts.Sent(r)
		caption = ""
	}
	for _, media := range m.Media {
		msg, err := c.sendFile(ctx, chat, m, media, caption)
		if err != nil {
			return parts.Fail(err)
		}
		caption = ""
		parts.Sent(ref(m.ChatID, msg))
	}
	return parts.First(), nil
}

// SendVoice sends m.Media[0] (Ogg/Opus) as a voice message, with
// m.Content as its caption when it fits.
func (c *Channel) SendVoice(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	chat, err := chatID(m.ChatID)
	if err != nil {
		return channels.MessageRef{}, err
	}
	if len(m.Media) == 0 || m.Media[0].Path == "" {
		return channels.MessageRef{}, channels.Permanentf("telegram: send voice: no audio file")
	}
	f, err := os.Open(m.Media[0].Path)
	if err != nil {
		return channels.MessageRef{}, channels.Permanentf("telegram: send voice: %w", err)
	}
	defer f.Close()
	params := &bot.SendVoiceParams{
		ChatID: chat, MessageThreadID: replyThread(m), ReplyParameters: c.replyTo(m),
		Voice: &models.InputFileUpload{Filename: filepath.Base(m.Media[0].Path), Data: f},
	}
	if caption := strings.TrimSpace(m.Content); caption != "" && utf8.RuneCountInString(caption) <= captionLimit {
		params.Caption, params.ParseMode = toHTML(caption), models.ParseModeHTML
	}
	msg, err := c.api.SendVoice(ctx, params)
	if err != nil {
		return channels.MessageRef{}, c.sendError("send voice to chat "+m.ChatID, err)
	}
	return ref(m.ChatID, msg), nil
}

const photoLimit = 10 << 20

func (c *Channel) sendFile(ctx context.Context, chat any, m bus.Outbound, media bus.Media, caption string) (*models.Message, error) {
	var file models.InputFile
	var size int64
	name := media.Name
	switch {
	case media.Path != "":
		f, err := os.Open(media.Path)
		if err != nil {
			return nil, channels.Permanentf("telegram: send file: %w", err)
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
		if name == "" {
			name = filepath.Base(media.Path)
		}
		file = &models.InputFileUpload{Filename: name, Data: f}
	case media.URL != "":
		file = &models.InputFileString{Data: media.URL}
	default:
		return nil, channels.Permanentf("telegram: send file: media has neither a path nor a URL")
	}
	html, mode := "", models.ParseMode("")
	if strings.TrimSpace(caption) != "" {
		html, mode = toHTML(caption), models.ParseModeHTML
	}
	thread, reply := replyThread(m), c.replyTo(m)
	var msg *models.Message
	var err error
	if media.IsImage() && size <= photoLimit {
		msg, err = c.api.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: chat, MessageThreadID: thread, Photo: file, Caption: html, ParseMode: mode, ReplyParameters: reply})
	} else {
		msg, err = c.api.SendDocument(ctx, &bot.SendDocumentParams{ChatID: chat, MessageThreadID: thread, Document: file, Caption: html, ParseMode: mode, ReplyParameters: reply})
	}
	if err != nil {
		return nil, c.sendError(fmt.Sprintf("send %s to chat %s", name, m.ChatID), err)
	}
	return msg, nil
}

func ref(chat string, msg *models.Message) channels.MessageRef {
	if msg == nil {
		return channels.MessageRef{ChatID: chat}
	}
	return channels.MessageRef{ChatID: chat, MessageID: strconv.Itoa(msg.ID)}
}

func (c *Channel) replyTo(m bus.Outbound) *models.ReplyParameters {
	if !c.cfg.ReplyToMessage || m.ReplyTo == "" {
		return nil
	}
	id, err := strconv.Atoi(m.ReplyTo)
	if err != nil {
		return nil
	}
	return &models.ReplyParameters{MessageID: id, AllowSendingWithoutReply: true}
}

// chatID is a numeric chat id, or an "@channelname".
func chatID(s string) (any, error) {
	if id, err := strconv.ParseInt(s, 10, 64); err == nil {
		return id, nil
	}
	if strings.HasPrefix(s, "@") && len(s) > 1 {
		return s, nil
	}
	return nil, channels.Permanentf("telegram: %q is not a chat id", s)
}

// replyThread is the forum topic m answers in: its ThreadID, or for a
// reply written before outbound messages carried one, its metadata.
func replyThread(m bus.Outbound) int {
	if n, err := strconv.Atoi(m.ThreadID); err == nil {
		return n
	}
	return threadID(m.Metadata)
}

// threadID reads the forum topic from message metadata (typing gets no
// more than the inbound metadata).
func threadID(meta bus.Metadata) int {
	n, _ := strconv.Atoi(meta["message_thread_id"])
	return n
}

// fallbackToPlain reports whether Telegram refused the HTML itself.
func fallbackToPlain(err error) bool {
	if err == nil || !errors.Is(err, bot.ErrorBadRequest) {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "can't parse entities") || strings.Contains(s, "message is too long")
}

// sendError classifies a Bot API error for the dispatcher: 429 carries
// retry_after, 400/401/403/404 are permanent (chat gone, bot blocked or
// removed, message invalid), anything else (network, 5xx) is retried.
func (c *Channel) sendError(what string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("telegram: %s: %w", what, err)
	}
	wrapped := fmt.Errorf("telegram: %s: %s", what, c.redact.Error(err))
	var tooMany *bot.TooManyRequestsError
	if errors.As(err, &tooMany) {
		return &channels.RetryAfterError{After: time.Duration(max(tooMany.RetryAfter, 1)) * time.Second, Err: wrapped}
	}
	var migrate *bot.MigrateError
	if errors.As(err, &migrate) {
		return channels.Permanentf("%w (the group is now supergroup %d)", wrapped, migrate.MigrateToChatID)
	}
	for _, perm := range []error{bot.ErrorBadRequest, bot.ErrorForbidden, bot.ErrorUnauthorized, bot.ErrorNotFound} {
		if errors.Is(err, perm) {
			return &channels.PermanentError{Err: wrapped}
		}
	}
	return wrapped
}
