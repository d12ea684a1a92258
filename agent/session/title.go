package session

import (
	"strings"
	"unicode/utf8"
)

// MetaTitle is the metadata key of a title the owner gave the session
// (renamed in the workbench).
const MetaTitle = "title"

// titleRunes is how long a title made of the first message may be.
const titleRunes = 80

// markdownMarks are dropped from a title made of the first message.
var markdownMarks = strings.NewReplacer("**", "", "__", "", "`", "", "# ", "")

// Title is what to call the session: the title the owner gave it, else the
// first line of its first user message, else its chat.
func (s *Session) Title() string {
	if t, _ := s.Meta(MetaTitle).(string); t != "" {
		return t
	}
	s.mu.RLock()
	first := ""
	for _, m := range s.Messages {
		if m.Role == "user" {
			first = m.Text()
			break
		}
	}
	s.mu.RUnlock()
	if t := firstLine(markdownMarks.Replace(first), titleRunes); t != "" {
		return t
	}
	_, chat := s.Origin()
	return chat
}

func firstLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n]) + "…"
	}
	return s
}
