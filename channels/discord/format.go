package discord

import "strings"

// toDiscord adapts Markdown to what Discord renders. Discord renders most
// of it itself (bold, italics, code, fences, links, lists, quotes, # to ###
// headings), so only two things change, outside code blocks:
//
//   - headings of level 4 and deeper (shown raw by Discord) become bold;
//   - tables (shown raw, misaligned) are wrapped in a code block so their
//     columns line up.
func toDiscord(md string) string {
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
		if h, ok := deepHeading(trimmed); ok {
			out = append(out, "**"+h+"**")
			continue
		}
		out = append(out, line)
	}
	if inTable {
		out = append(out, "```")
	}
	return strings.Join(out, "\n")
}

// deepHeading returns the text of a heading of level 4 to 6.
func deepHeading(line string) (string, bool) {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n < 4 || n > 6 || n >= len(line) || line[n] != ' ' {
		return "", false
	}
	text := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(line[n:]), "#"))
	if text == "" {
		return "", false
	}
	return text, true
}
