package line

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf16"

	"github.com/line/line-bot-sdk-go/v8/linebot/messaging_api"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// maxMessagesPerCall is how many message objects one reply or push takes.
const maxMessagesPerCall = 5

// Send implements channels.Channel: the answer to a message uses its reply
// token while it is fresh and unused; everything else is pushed. A text
// over 5,000 UTF-16 units (emoji count twice) goes as several message
// objects of one call.
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	text := Format(m.Content)
	if text == "" {
		return channels.MessageRef{}, channels.Permanentf("line: empty message")
	}
	if m.ChatID == "" {
		return channels.MessageRef{}, channels.Permanentf("line: send: empty chat id")
	}
	parts := splitUTF16(text, maxText)
	if len(parts) > maxMessagesPerCall {
		return channels.MessageRef{}, channels.Permanentf("line: send: %d characters is more than one call takes", len(text))
	}
	quote := ""
	if m.ReplyTo != "" && m.Metadata["quote_token"] != "" {
		quote = m.Metadata["quote_token"]
	}
	msgs := make([]messaging_api.MessageInterface, 0, len(parts))
	for i, p := range parts {
		tm := messaging_api.TextMessage{Text: p}
		if i == 0 {
			tm.QuoteToken = quote
		}
		msgs = append(msgs, tm)
	}
	api, err := c.api(ctx)
	if err != nil {
		return channels.MessageRef{}, err
	}
	if token := m.Metadata["reply_token"]; c.claim(token) {
		res, out, err := api.ReplyMessageWithHttpInfo(&messaging_api.ReplyMessageRequest{ReplyToken: token, Messages: msgs})
		err = c.apiError("POST /v2/bot/message/reply", res, err)
		switch {
		case err == nil:
			return ref(m.ChatID, out.SentMessages), nil
		case status(err) == http.StatusBadRequest && strings.Contains(err.Error(), "Invalid reply token"):
			c.log.Debug("line: reply token expired; pushing instead", "chat_id", m.ChatID)
		default:
			return channels.MessageRef{}, err
		}
	}
	res, out, err := api.PushMessageWithHttpInfo(&messaging_api.PushMessageRequest{To: m.ChatID, Messages: msgs}, retryKey(m.IdempotencyKey))
	if res != nil && res.StatusCode == http.StatusConflict {
		// The retry key was accepted before: the message is out.
		return channels.MessageRef{ChatID: m.ChatID, MessageID: res.Header.Get("X-Line-Accepted-Request-Id")}, nil
	}
	if err := c.apiError("POST /v2/bot/message/push", res, err); err != nil {
		return channels.MessageRef{}, err
	}
	return ref(m.ChatID, out.SentMessages), nil
}

func ref(chatID string, sent []messaging_api.SentMessage) channels.MessageRef {
	r := channels.MessageRef{ChatID: chatID}
	if len(sent) > 0 {
		r.MessageID = sent[0].Id
	}
	return r
}

// retryKey is the X-Line-Retry-Key of a push: a UUID derived from the
// dispatcher's idempotency key (the same in every attempt), or a random
// one without it.
func retryKey(idem string) string {
	var b [16]byte
	if idem != "" {
		sum := sha256.Sum256([]byte("nanobot-line-retry:" + idem))
		copy(b[:], sum[:16])
	} else {
		_, _ = rand.Read(b[:])
	}
	b[6] = b[6]&0x0f | 0x40 // version 4 layout
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// splitUTF16 cuts text into pieces of at most limit UTF-16 units, never
// inside a surrogate pair, preferring a line break in the last fifth.
func splitUTF16(text string, limit int) []string {
	units := utf16.Encode([]rune(text))
	var out []string
	for len(units) > limit {
		cut := limit
		if utf16.IsSurrogate(rune(units[cut-1])) && units[cut-1] < 0xdc00 {
			cut-- // do not split a pair
		}
		for i := cut - 1; i > limit*4/5; i-- {
			if units[i] == '\n' {
				cut = i + 1
				break
			}
		}
		out = append(out, string(utf16.Decode(units[:cut])))
		units = units[cut:]
	}
	return append(out, string(utf16.Decode(units)))
}

// Typing implements channels.Typer with the loading animation (one-on-one
// chats only; LINE has none for groups, so there it does nothing).
func (c *Channel) Typing(ctx context.Context, chatID string, _ bus.Metadata) error {
	if !strings.HasPrefix(chatID, "U") {
		return nil
	}
	api, err := c.api(ctx)
	if err != nil {
		return err
	}
	res, _, err := api.ShowLoadingAnimationWithHttpInfo(&messaging_api.ShowLoadingAnimationRequest{ChatId: chatID, LoadingSeconds: 20})
	return c.apiError("POST /v2/bot/chat/loading/start", res, err)
}
