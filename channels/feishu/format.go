package feishu

import (
	"regexp"
	"strings"
	"sync"
)

// Feishu renders a subset of Markdown: the "md" element of post messages
// takes bold, italics, strikethrough, links, inline code, code blocks,
// lists, quotes and rules, but not headings, tables or images; the
// markdown element of a card (JSON 2.0) takes headings too. format.go
// rewrites what would show as raw syntax; code blocks stay untouched.

var (
	// Compiled on first use: a process without this channel never builds them.
	headingRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(#{1,6})\s+(.+?)\s*#*\s*$`) })
	imageRe   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`!\[([^\]]*)\]\(([^)\s]+)[^)]*\)`) })
	tableSep  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$`) })
)

// toPost converts Markdown for the md element of a post message.
func toPost(md string) string { return rewrite(md, false) }

// toCard converts Markdown for a card's markdown element.
func toCard(md string) string { return rewrite(md, true) }

// rewrite walks the lines outside code fences: headings become bold lines
// (unless keepHeadings), images become links, and tables go into a code
// block so that their columns stay aligned.
func rewrite(md string, keepHeadings bool) string {
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	out := make([]string, 0, len(lines))
	fence := ""
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			out = append(out, line)
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, "`~") == "" {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			out = append(out, line)
			continue
		}
		if isTableRow(trimmed) && i+1 < len(lines) && tableSep().MatchString(lines[i+1]) {
			out = append(out, "```")
			for ; i < len(lines) && isTableRow(strings.TrimSpace(lines[i])); i++ {
				out = append(out, strings.TrimSpace(lines[i]))
			}
			i--
			out = append(out, "```")
			continue
		}
		if m := headingRe().FindStringSubmatch(trimmed); m != nil && !keepHeadings {
			line = "**" + strings.ReplaceAll(m[2], "**", "") + "**"
		}
		line = imageRe().ReplaceAllStringFunc(line, func(s string) string {
			sm := imageRe().FindStringSubmatch(s)
			alt := sm[1]
			if alt == "" {
				alt = "image"
			}
			return "[" + alt + "](" + sm[2] + ")"
		})
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

func isTableRow(s string) bool {
	return strings.HasPrefix(s, "|") && strings.Count(s, "|") >= 2
}
