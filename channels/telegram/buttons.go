package telegram

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/nanobot-go/nanobot/bus"
)

// maxCallbackData is the Bot API's limit on a button's callback data.
const maxCallbackData = 64

// keyboard is the inline keyboard of a message's actions, one row, or nil
// (a ReplyMarkup interface holding a nil pointer would be sent as "null").
// An action whose command does not fit in callback data is left out: the
// message's text names the commands too.
func keyboard(actions []bus.Action) models.ReplyMarkup {
	var row []models.InlineKeyboardButton
	for _, a := range actions {
		if a.Label == "" || len(a.Command) == 0 || len(a.Command) > maxCallbackData {
			continue
		}
		row = append(row, models.InlineKeyboardButton{Text: a.Label, CallbackData: a.Command})
	}
	if len(row) == 0 {
		return nil
	}
	return &models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{row}}
}

// handleCallback turns a button press into the command it carries, sent by
// the person who pressed it in the chat the button is in: the gate and the
// agent then treat it exactly as if they had typed it (an approval answer
// counts only from an admin). The press is answered at once so the
// client's spinner stops. Data that is not a command (our buttons only
// carry commands) and presses on messages Telegram no longer shows are
// skipped.
func (c *Channel) handleCallback(ctx context.Context, q *models.CallbackQuery, retry bool) error {
	ackCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if _, err := c.api.AnswerCallbackQuery(ackCtx, &bot.AnswerCallbackQueryParams{CallbackQueryID: q.ID}); err != nil {
		c.log.Debug("telegram: answering a button press failed", "err", c.redact.Error(err))
	}
	cancel()
	msg := q.Message.Message
	if msg == nil || msg.Chat.ID == 0 || !strings.HasPrefix(q.Data, "/") || q.From.ID == 0 {
		c.log.Debug("telegram: button press skipped", "callback_id", q.ID)
		return nil
	}
	chatID := strconv.FormatInt(msg.Chat.ID, 10)
	in := bus.Inbound{
		Channel:    c.Name(),
		SenderID:   userID(q.From.ID, q.From.Username),
		ChatID:     chatID,
		Content:    q.Data,
		MessageID:  "cb:" + q.ID,
		IsGroup:    msg.Chat.Type != models.ChatTypePrivate,
		Metadata:   bus.Metadata{"callback_query_id": q.ID, "chat_type": string(msg.Chat.Type), "user_id": strconv.FormatInt(q.From.ID, 10)},
		ReceivedAt: time.Now(),
	}
	if msg.IsTopicMessage && msg.MessageThreadID != 0 {
		thread := strconv.Itoa(msg.MessageThreadID)
		in.Metadata["message_thread_id"] = thread
		in.SessionKey = bus.SessionKeyOf(c.Name(), chatID, "topic", thread)
		in.ThreadID = thread
	}
	return c.deliver(ctx, in, retry)
}
