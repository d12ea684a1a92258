package telegram

import (
	"context"
	"errors"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/nanobot-go/nanobot/bus"
)

// A message draft (sendMessageDraft, Bot API 9.3) is a preview of a
// message being written that Telegram shows in a private chat, animating
// the changes of one draft id, for about 30 seconds; the message itself
// must be sent as usual. The dispatcher draws it as the answer grows,
// again before it expires, and sends the answer when it is complete
// (channels.Drafter).

// DraftsTo implements channels.Drafter: streams to private chats are
// drafted with streamMode "draft", until Telegram said this bot has no
// drafts.
func (c *Channel) DraftsTo(m bus.Outbound) bool {
	return c.cfg.StreamMode == StreamDraft && !c.noDrafts.Load() && privateChat(m)
}

// DraftRefresh implements channels.Drafter: a draft is drawn again after
// 20 s without a change, well inside the 30 s Telegram keeps it.
func (c *Channel) DraftRefresh() time.Duration { return c.draftRefresh }

// Draft implements channels.Drafter: m.Content, as HTML (plain text if
// Telegram refuses the markup), as draft draftID(m.StreamID) of m's chat.
// An answer that says drafts are not available to this bot switches them
// off for the rest of the process, logged once; the error is returned
// either way, and the dispatcher goes on editing a message.
func (c *Channel) Draft(ctx context.Context, m bus.Outbound) error {
	chat, err := chatID(m.ChatID)
	if err != nil {
		return err
	}
	p := &bot.SendMessageDraftParams{
		ChatID:          chat,
		MessageThreadID: replyThread(m),
		DraftID:         strconv.FormatInt(draftID(m.StreamID), 10),
		Text:            toHTML(m.Content),
		ParseMode:       models.ParseModeHTML,
	}
	_, err = c.api.SendMessageDraft(ctx, p)
	if fallbackToPlain(err) {
		p.Text, p.ParseMode = m.Content, ""
		_, err = c.api.SendMessageDraft(ctx, p)
	}
	if err == nil {
		return nil
	}
	if draftsUnavailable(err) && c.noDrafts.CompareAndSwap(false, true) {
		c.log.Warn("telegram: message drafts are not available to this bot; answers stream by editing a message from now on",
			"err", c.redact.Error(err))
	}
	return c.sendError("draft in chat "+m.ChatID, err)
}

// privateChat reports whether m goes to a private chat: its chat type when
// the message it answers said, else a positive chat id (users have
// positive ids, groups and channels negative ones).
func privateChat(m bus.Outbound) bool {
	if t := m.Metadata["chat_type"]; t != "" {
		return t == string(models.ChatTypePrivate)
	}
	id, err := strconv.ParseInt(m.ChatID, 10, 64)
	return err == nil && id > 0
}

// draftID is the draft id of a stream: the same for all of its drafts, so
// Telegram animates them as one, and never 0, which Telegram refuses.
func draftID(stream string) int64 {
	h := fnv.New32a()
	h.Write([]byte(stream))
	if id := int64(h.Sum32() & 0x7fffffff); id != 0 {
		return id
	}
	return 1
}

// draftsUnavailable reports whether Telegram answered that this bot cannot
// send drafts at all (a Bot API server without the method, or drafts not
// open to this bot), rather than refusing one draft (a chat gone, text
// too long), which only moves that stream to edits.
func draftsUnavailable(err error) bool {
	if errors.Is(err, bot.ErrorNotFound) {
		return true // 404: the server has no such method
	}
	if !errors.Is(err, bot.ErrorBadRequest) {
		return false
	}
	s := strings.ToLower(err.Error())
	for _, hint := range []string{"method not found", "unknown method", "not supported", "unsupported", "not available", "not allowed", "not enabled"} {
		if strings.Contains(s, hint) {
			return true
		}
	}
	return false
}
