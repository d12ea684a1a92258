package telegramtest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// RichMessageLimit is Telegram's limit on the text of a rich message.
const RichMessageLimit = 32768

// private reports whether chat is a private chat: the type it had when a
// user wrote in it, else (a chat the fake has not seen) a positive id, as
// private chats have the user's id and groups negative ones.
func (s *Server) private(chat int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.chatTypes[chat]; ok {
		return t == "private"
	}
	return chat > 0
}

// sendMessageDraft checks a draft as the Bot API does (a private chat, a
// non-zero draft_id, text of at most 4096 characters after entity
// parsing) and keeps it.
func (s *Server) sendMessageDraft(w http.ResponseWriter, p map[string]string) {
	chat, err := strconv.ParseInt(p["chat_id"], 10, 64)
	if err != nil {
		reply(w, 400, "Bad Request: chat not found", 0, nil)
		return
	}
	if s.isBlocked(p["chat_id"]) {
		reply(w, 403, "Forbidden: bot was blocked by the user", 0, nil)
		return
	}
	if !s.private(chat) {
		reply(w, 400, "Bad Request: message drafts can be sent only to private chats", 0, nil)
		return
	}
	raw, ok := p["draft_id"]
	if !ok {
		reply(w, 400, "Bad Request: parameter \"draft_id\" is required", 0, nil)
		return
	}
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id == 0 {
		reply(w, 400, "Bad Request: draft_id must be a non-zero integer", 0, nil)
		return
	}
	if _, ok := p["text"]; !ok {
		reply(w, 400, "Bad Request: parameter \"text\" is required", 0, nil)
		return
	}
	visible, _, ok := s.render(w, p["text"], p["parse_mode"], MessageLimit)
	if !ok {
		return
	}
	thread, _ := strconv.ParseInt(p["message_thread_id"], 10, 64)
	s.mu.Lock()
	s.drafts = append(s.drafts, Draft{ChatID: chat, DraftID: id, ThreadID: thread, Text: p["text"], ParseMode: p["parse_mode"], Visible: visible, At: time.Now()})
	s.mu.Unlock()
	reply(w, 200, "", 0, true)
}

// sendRichMessage checks a rich message (exactly one of markdown, html and
// blocks in rich_message) and keeps it as a message whose text is its
// markup, as sent.
func (s *Server) sendRichMessage(w http.ResponseWriter, p map[string]string) {
	chat, err := strconv.ParseInt(p["chat_id"], 10, 64)
	if err != nil {
		reply(w, 400, "Bad Request: chat not found", 0, nil)
		return
	}
	if s.isBlocked(p["chat_id"]) {
		reply(w, 403, "Forbidden: bot was blocked by the user", 0, nil)
		return
	}
	var rich struct {
		Markdown *string         `json:"markdown"`
		HTML     *string         `json:"html"`
		Blocks   json.RawMessage `json:"blocks"`
	}
	if err := json.Unmarshal([]byte(p["rich_message"]), &rich); err != nil {
		reply(w, 400, "Bad Request: can't parse rich_message JSON object", 0, nil)
		return
	}
	set := 0
	text := ""
	for _, f := range []*string{rich.Markdown, rich.HTML} {
		if f != nil {
			set++
			text = *f
		}
	}
	if len(rich.Blocks) > 0 {
		set++
	}
	if set != 1 {
		reply(w, 400, "Bad Request: exactly one of markdown, html and blocks must be specified in rich_message", 0, nil)
		return
	}
	if rich.Blocks == nil && strings.TrimSpace(text) == "" {
		reply(w, 400, "Bad Request: rich message is empty", 0, nil)
		return
	}
	if utf8.RuneCountInString(text) > RichMessageLimit {
		reply(w, 400, "Bad Request: rich message is too long", 0, nil)
		return
	}
	buttons, ok := inlineKeyboard(w, p["reply_markup"])
	if !ok {
		return
	}
	replyTo, ok := replyParameters(w, p["reply_parameters"])
	if !ok {
		return
	}
	thread, _ := strconv.ParseInt(p["message_thread_id"], 10, 64)
	s.store(w, Sent{Method: "sendRichMessage", ChatID: chat, Text: text, Visible: text, Rendered: text, ReplyTo: replyTo, ThreadID: thread, Buttons: buttons, Rich: true})
}
