package telegramtest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// inlineKeyboard reads a reply_markup with an inline keyboard as Telegram
// checks it: callback data of 1 to 64 bytes on every button. It writes the
// error reply and reports false when the markup is refused.
func inlineKeyboard(w http.ResponseWriter, raw string) ([][]Button, bool) {
	if raw == "" {
		return nil, true
	}
	var m struct {
		InlineKeyboard [][]Button `json:"inline_keyboard"`
	}
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		reply(w, 400, "Bad Request: can't parse reply keyboard markup JSON object", 0, nil)
		return nil, false
	}
	for _, row := range m.InlineKeyboard {
		for _, b := range row {
			if b.Text == "" {
				reply(w, 400, "Bad Request: text buttons are unallowed in the inline keyboard", 0, nil)
				return nil, false
			}
			if n := len(b.CallbackData); n < 1 || n > 64 {
				reply(w, 400, "Bad Request: BUTTON_DATA_INVALID", 0, nil)
				return nil, false
			}
		}
	}
	return m.InlineKeyboard, true
}

// Press queues the callback_query update of user from pressing the button
// labelled label under the bot's message messageID in chat. The test
// fails when the message has no such button: Telegram only sends the data
// of buttons the bot showed. It returns the update id.
func (s *Server) Press(chat Chat, from User, messageID int64, label string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.msgs[[2]int64{chat.ID, messageID}]
	if !ok {
		s.t.Errorf("fakebot: press %q: no message %d in chat %d", label, messageID, chat.ID)
		return 0
	}
	data := ""
	for _, row := range m.Buttons {
		for _, b := range row {
			if b.Text == label {
				data = b.CallbackData
			}
		}
	}
	if data == "" {
		s.t.Errorf("fakebot: press %q: message %d has no such button (%v)", label, messageID, m.Buttons)
		return 0
	}
	s.users[from.ID] = from
	return s.pushLocked(map[string]any{"callback_query": map[string]any{
		"id":            strconv.FormatInt(s.nextID, 10) + "-cb",
		"from":          userJSON(from),
		"chat_instance": strconv.FormatInt(chat.ID, 10),
		"data":          data,
		"message": map[string]any{
			"message_id": messageID, "date": time.Now().Unix(), "chat": chatJSON(chat),
			"from": map[string]any{"id": BotID, "is_bot": true, "first_name": "Nano", "username": BotUsername},
			"text": m.Visible,
		},
	}})
}
