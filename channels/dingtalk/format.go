package dingtalk

import (
	"strings"
	"unicode/utf8"
)

// toDingTalk adapts Markdown to DingTalk's sampleMarkdown, which renders
// headings, bold, italics, links, images, lists, quotes and code but not
// tables or strikethrough. Outside code blocks, tables are put in a code
// block (their columns stay aligned) and ~~strike~~ loses its tildes.
func toDingTalk(md string) string {
	lines := strings.Split(md, "\n")
	out := make([]string, 0, len(lines))
	inFence, inTable := false, false
	for _, line := range lines {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if inTable {
				out = append(out, "```")
				inTable = false
			}
			inFence = !inFence
			out = append(out, line)
			continue
		}
		if inFence {
			out = append(out, line)
			continue
		}
		isRow := strings.HasPrefix(trimmed, "|") && strings.Count(trimmed, "|") >= 2
		switch {
		case isRow && !inTable:
			out = append(out, "```", trimmed)
			inTable = true
			continue
		case isRow:
			out = append(out, trimmed)
			continue
		case inTable:
			out = append(out, "```")
			inTable = false
		}
		out = append(out, stripStrike(line))
	}
	if inTable {
		out = append(out, "```")
	}
	return strings.Join(out, "\n")
}

// stripStrike removes ~~ pairs outside inline code.
func stripStrike(line string) string {
	if !strings.Contains(line, "~~") {
		return line
	}
	var b strings.Builder
	inCode := false
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '`':
			inCode = !inCode
		case !inCode && strings.HasPrefix(line[i:], "~~"):
			i++
			continue
		}
		b.WriteByte(line[i])
	}
	return b.String()
}

// title is the notification title DingTalk shows in the chat list: the
// first non-empty line without Markdown marks, at most 20 characters.
func title(text string) string {
	for line := range strings.SplitSeq(text, "\n") {
		t := strings.TrimSpace(strings.Trim(strings.TrimSpace(line), "#*>`-_ "))
		if t == "" {
			continue
		}
		if utf8.RuneCountInString(t) > 20 {
			t = string([]rune(t)[:20]) + "…"
		}
		return t
	}
	return "nanobot"
}
