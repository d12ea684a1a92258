package qq

import (
	"regexp"
	"strconv"
	"strings"
)

// toPlain flattens Markdown for QQ's plain text messages (msg_type 0),
// which show every character as typed. Outside code blocks: headings lose
// their #s, bold/italic/strike markers and inline-code backticks go, links
// become "text (url)", images their URL, list bullets "•", and table
// separator rows disappear (rows keep their | cells). Code blocks keep
// their ``` fences, so code stays recognisable and splits stay intact.
func toPlain(md string) string {
	return mapLines(md, func(line string) string {
		trimmed := strings.TrimSpace(line)
		if isTableSeparator(trimmed) {
			return "\x00" // dropped below
		}
		if h, ok := heading(trimmed); ok {
			return inlinePlain(h)
		}
		indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
		for _, b := range []string{"- ", "* ", "+ "} {
			if strings.HasPrefix(trimmed, b) {
				return indent + "• " + inlinePlain(trimmed[len(b):])
			}
		}
		return inlinePlain(line)
	})
}

// toMarkdown adapts Markdown for QQ's native Markdown messages (msg_type
// 2), which render headings, emphasis, links, lists, quotes and code
// blocks but not tables: a table is put in a code block so its columns
// line up.
func toMarkdown(md string) string {
	lines := strings.Split(md, "\n")
	out := make([]string, 0, len(lines))
	inFence, inTable := false, false
	for _, line := range lines {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			inFence = !inFence
		}
		isRow := !inFence && strings.HasPrefix(trimmed, "|") && strings.Count(trimmed, "|") >= 2
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
		out = append(out, line)
	}
	if inTable {
		out = append(out, "```")
	}
	return strings.Join(out, "\n")
}

// mapLines applies f to every line outside fenced code blocks; lines f
// turns into "\x00" are dropped.
func mapLines(md string, f func(string) string) string {
	lines := strings.Split(md, "\n")
	out := make([]string, 0, len(lines))
	inFence := false
	for _, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			out = append(out, line)
			continue
		}
		if inFence {
			out = append(out, line)
			continue
		}
		if l := f(line); l != "\x00" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// heading returns the text of an ATX heading ("## Title").
func heading(line string) (string, bool) {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n >= len(line) || line[n] != ' ' {
		return "", false
	}
	return strings.TrimSpace(strings.TrimRight(strings.TrimSpace(line[n:]), "#")), true
}

var separatorRe = regexp.MustCompile(`^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?$`)

// isTableSeparator matches "|---|:-:|"; a lone "---" is a rule and stays.
func isTableSeparator(line string) bool {
	return strings.Contains(line, "|") && separatorRe.MatchString(line)
}

var (
	imageRe  = regexp.MustCompile(`!\[[^\]]*\]\(([^)\s]+)\)`)
	linkRe   = regexp.MustCompile(`\[([^\]]+)\]\(([^)\s]+)\)`)
	codeRe   = regexp.MustCompile("`([^`]+)`")
	boldRe   = regexp.MustCompile(`\*\*([^*]+)\*\*|__([^_]+)__`)
	italicRe = regexp.MustCompile(`(^|[^\w*])\*([^*\s][^*]*)\*`)
	strikeRe = regexp.MustCompile(`~~([^~]+)~~`)
)

// inlinePlain removes inline Markdown from one line. Text inside inline
// code is kept as written.
func inlinePlain(s string) string {
	// Inline code first, protected from the other rules.
	var codes []string
	s = codeRe.ReplaceAllStringFunc(s, func(m string) string {
		codes = append(codes, m[1:len(m)-1])
		return "\x01" + strconv.Itoa(len(codes)-1) + "\x01"
	})
	s = imageRe.ReplaceAllString(s, "$1")
	s = linkRe.ReplaceAllStringFunc(s, func(m string) string {
		sub := linkRe.FindStringSubmatch(m)
		if sub[1] == sub[2] {
			return sub[2]
		}
		return sub[1] + " (" + sub[2] + ")"
	})
	s = boldRe.ReplaceAllString(s, "$1$2")
	s = strikeRe.ReplaceAllString(s, "$1")
	s = italicRe.ReplaceAllString(s, "$1$2")
	for i, code := range codes {
		s = strings.Replace(s, "\x01"+strconv.Itoa(i)+"\x01", code, 1)
	}
	return s
}
