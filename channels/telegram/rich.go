package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// A rich message (sendRichMessage, Bot API 10.1) carries structured
// content Telegram renders itself: headings, lists, tables, formulas. It
// is given as an InputRichMessage whose markdown field holds the text. The
// channel uses it where HTML falls short, and only there: with
// richMessages on, a complete answer that holds a Markdown table is sent as
// one, so the table shows as a table rather than as a monospace block.
// Only a message that is never edited (no StreamID) is sent so, as the
// edits of a stream are HTML text. Whatever Telegram refuses is sent as
// HTML instead; an answer that says this bot has no rich messages switches
// them off for the rest of the process, logged once.

// richFor reports whether m goes out as a rich message.
func (c *Channel) richFor(m bus.Outbound) bool {
	return c.cfg.RichMessages && !c.noRich.Load() && m.StreamID == "" && hasTable(m.Content)
}

// sendRich sends m as a rich message. sent is false when Telegram refused
// it and m should go as HTML instead; err is a failure the HTML path
// would meet too (a blocked bot, a rate limit, the network).
func (c *Channel) sendRich(ctx context.Context, m bus.Outbound, chat any) (_ channels.MessageRef, sent bool, err error) {
	req := map[string]any{"chat_id": chat, "rich_message": map[string]any{"markdown": m.Content}}
	if thread := replyThread(m); thread != 0 {
		req["message_thread_id"] = thread
	}
	if r := c.replyTo(m); r != nil {
		req["reply_parameters"] = r
	}
	if k := keyboard(m.Actions); k != nil {
		req["reply_markup"] = k
	}
	var msg models.Message
	err = c.call(ctx, "sendRichMessage", req, &msg)
	switch {
	case err == nil:
		return ref(m.ChatID, &msg), true, nil
	case richUnavailable(err):
		if c.noRich.CompareAndSwap(false, true) {
			c.log.Warn("telegram: rich messages are not available to this bot; tables are sent as HTML from now on", "err", c.redact.Error(err))
		}
		return channels.MessageRef{}, false, nil
	case errors.Is(err, bot.ErrorBadRequest):
		c.log.Warn("telegram: rich message refused; sending it as HTML", "chat_id", m.ChatID, "err", c.redact.Error(err))
		return channels.MessageRef{}, false, nil
	}
	return channels.MessageRef{}, false, c.sendError("send rich message to chat "+m.ChatID, err)
}

// richUnavailable reports whether Telegram answered that it has no
// sendRichMessage for this bot (an older Bot API server).
func richUnavailable(err error) bool {
	if errors.Is(err, bot.ErrorNotFound) {
		return true
	}
	s := strings.ToLower(err.Error())
	return errors.Is(err, bot.ErrorBadRequest) && (strings.Contains(s, "method not found") || strings.Contains(s, "unknown method"))
}

// call makes a Bot API call the library does not know, as JSON, through
// the sending client (its proxy and deadline), and decodes the result
// into dest. API errors are the library's, so sendError classifies them.
func (c *Channel) call(ctx context.Context, method string, params, dest any) error {
	body, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.APIBase+"/bot"+c.cfg.Token+"/"+method, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&sender{c: c}).Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	var r struct {
		OK          bool            `json:"ok"`
		Result      json.RawMessage `json:"result"`
		ErrorCode   int             `json:"error_code"`
		Description string          `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("%s: HTTP %d with an unreadable body", method, resp.StatusCode)
	}
	if !r.OK {
		return apiError(r.ErrorCode, r.Description, r.Parameters.RetryAfter)
	}
	if err := json.Unmarshal(r.Result, dest); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

// apiError is a Bot API error answer as the library reports it.
func apiError(code int, desc string, retryAfter int) error {
	switch code {
	case http.StatusBadRequest:
		return fmt.Errorf("%w, %s", bot.ErrorBadRequest, desc)
	case http.StatusUnauthorized:
		return fmt.Errorf("%w, %s", bot.ErrorUnauthorized, desc)
	case http.StatusForbidden:
		return fmt.Errorf("%w, %s", bot.ErrorForbidden, desc)
	case http.StatusNotFound:
		return fmt.Errorf("%w, %s", bot.ErrorNotFound, desc)
	case http.StatusConflict:
		return fmt.Errorf("%w, %s", bot.ErrorConflict, desc)
	case http.StatusTooManyRequests:
		return &bot.TooManyRequestsError{Message: fmt.Sprintf("%s, %s", bot.ErrorTooManyRequests, desc), RetryAfter: retryAfter}
	}
	return fmt.Errorf("error response from telegram: %d %s", code, desc)
}

// hasTable reports whether md has a Markdown table (a row of cells over a
// separator line) outside code blocks.
func hasTable(md string) bool {
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	fence := ""
	for i, line := range lines {
		t := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if f, _, ok := openingFence(t); ok {
			fence = f
			continue
		}
		if isTableRow(t) && i+1 < len(lines) && isTableSeparator(strings.TrimSpace(lines[i+1])) {
			return true
		}
	}
	return false
}
