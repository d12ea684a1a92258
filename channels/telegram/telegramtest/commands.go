package telegramtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"unicode/utf8"
)

var commandName = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

// setMyCommands checks a command menu as the Bot API does (names of 1-32
// of a-z 0-9 _, descriptions of 1-256 characters, a known scope with the
// ids it needs) and keeps it for its scope, replacing the one before.
func (s *Server) setMyCommands(w http.ResponseWriter, p map[string]string) {
	var cmds []struct {
		Command     string `json:"command"`
		Description string `json:"description"`
	}
	if err := json.Unmarshal([]byte(p["commands"]), &cmds); err != nil {
		reply(w, 400, "Bad Request: can't parse commands JSON object", 0, nil)
		return
	}
	if len(cmds) > 100 {
		reply(w, 400, "Bad Request: too many commands specified", 0, nil)
		return
	}
	var names []string
	for _, c := range cmds {
		if !commandName.MatchString(c.Command) {
			reply(w, 400, "Bad Request: BOT_COMMAND_INVALID", 0, nil)
			return
		}
		if n := utf8.RuneCountInString(c.Description); n < 1 || n > 256 {
			reply(w, 400, "Bad Request: BOT_COMMAND_DESCRIPTION_INVALID", 0, nil)
			return
		}
		names = append(names, c.Command)
	}
	scope, ok := scopeKey(p["scope"])
	if !ok {
		reply(w, 400, "Bad Request: can't parse BotCommandScope JSON object", 0, nil)
		return
	}
	s.mu.Lock()
	s.menus[scope] = names
	s.mu.Unlock()
	reply(w, 200, "", 0, true)
}

// scopeKey names a BotCommandScope the way Commands takes it.
func scopeKey(raw string) (string, bool) {
	if raw == "" {
		return "default", true
	}
	var sc struct {
		Type   string          `json:"type"`
		ChatID json.RawMessage `json:"chat_id"`
		UserID int64           `json:"user_id"`
	}
	if err := json.Unmarshal([]byte(raw), &sc); err != nil {
		return "", false
	}
	// The chat as written: an id (kept digit for digit) or "@username".
	chat := string(sc.ChatID)
	if strings.HasPrefix(chat, `"`) {
		if json.Unmarshal(sc.ChatID, &chat) != nil {
			return "", false
		}
	}
	switch sc.Type {
	case "default", "all_private_chats", "all_group_chats", "all_chat_administrators":
		return sc.Type, true
	case "chat", "chat_administrators":
		if chat == "" {
			return "", false
		}
		return sc.Type + ":" + chat, true
	case "chat_member":
		if chat == "" || sc.UserID == 0 {
			return "", false
		}
		return fmt.Sprintf("chat_member:%s:%d", chat, sc.UserID), true
	}
	return "", false
}
