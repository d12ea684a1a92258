package onebot

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nanobot-go/nanobot/channels/markdown"
)

// segment is a OneBot message segment with its data as text (the
// implementations send numbers and strings interchangeably).
type segment struct {
	Type string
	Data map[string]string
}

// parseMessage reads an event's message field: a segment array or a
// CQ-code string.
func parseMessage(raw json.RawMessage) ([]segment, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return nil, nil
	}
	if s[0] == '"' {
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, err
		}
		return ParseCQ(text), nil
	}
	var arr []struct {
		Type string                     `json:"type"`
		Data map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &arr); err != nil {
		return nil, fmt.Errorf("message is neither a segment array nor a CQ-code string: %w", err)
	}
	out := make([]segment, 0, len(arr))
	for _, a := range arr {
		sg := segment{Type: a.Type, Data: map[string]string{}}
		for k, v := range a.Data {
			sg.Data[k] = idOf(v)
		}
		out = append(out, sg)
	}
	return out, nil
}

// ParseCQ splits a CQ-code string ("hi [CQ:at,qq=123] there") into
// segments, unescaping text (&amp; &#91; &#93;) and parameters (also
// &#44;). A "[CQ:" without its closing bracket is kept as text.
func ParseCQ(s string) []segment {
	var out []segment
	text := func(t string) {
		if t == "" {
			return
		}
		t = unescapeCQ(t)
		if n := len(out); n > 0 && out[n-1].Type == "text" {
			out[n-1].Data["text"] += t
			return
		}
		out = append(out, segment{Type: "text", Data: map[string]string{"text": t}})
	}
	for s != "" {
		i := strings.Index(s, "[CQ:")
		if i < 0 {
			text(s)
			break
		}
		end := strings.IndexByte(s[i:], ']')
		if end < 0 {
			text(s)
			break
		}
		text(s[:i])
		body := s[i+len("[CQ:") : i+end]
		parts := strings.Split(body, ",")
		sg := segment{Type: strings.TrimSpace(parts[0]), Data: map[string]string{}}
		for _, p := range parts[1:] {
			k, v, _ := strings.Cut(p, "=")
			sg.Data[k] = unescapeCQ(v)
		}
		out = append(out, sg)
		s = s[i+end+1:]
	}
	return out
}

var cqUnescaper = strings.NewReplacer("&#91;", "[", "&#93;", "]", "&#44;", ",", "&amp;", "&")

func unescapeCQ(s string) string { return cqUnescaper.Replace(s) }

// Format renders the agent's Markdown for QQ, which shows plain text.
func Format(md string) string { return markdown.PlainText(md) }
