package slack

import (
	"regexp"
	"strings"
	"sync"
)

// toMrkdwn converts the agent's Markdown to Slack's mrkdwn: **bold** and
// __bold__ -> *bold*, *italic* and _italic_ -> _italic_, ~~strike~~ ->
// ~strike~, [text](url) -> <url|text>, headings -> bold lines, bullets ->
// •. Code spans and fenced blocks keep their text (fences lose the
// language, which Slack would show as text); &, < and > are escaped
// everywhere, as Slack requires.
func toMrkdwn(md string) string {
	var out []string
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if fence, ok := fenceStart(line); ok {
			block := []string{}
			i++
			for ; i < len(lines); i++ {
				if strings.HasPrefix(strings.TrimSpace(lines[i]), fence) {
					break
				}
				block = append(block, escape(lines[i]))
			}
			out = append(out, "```\n"+strings.Join(block, "\n")+"\n```")
			continue
		}
		out = append(out, convertLine(line))
	}
	return strings.Join(out, "\n")
}

// fenceStart reports whether line opens a fenced code block, and its fence.
func fenceStart(line string) (string, bool) {
	t := strings.TrimSpace(line)
	for _, f := range []string{"```", "~~~"} {
		if strings.HasPrefix(t, f) {
			return f, true
		}
	}
	return "", false
}

var (
	// Compiled on first use: a process without this channel never builds them.
	headingRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*$`) })
	bulletRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\s*)[-*+]\s+`) })
	linkRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[([^\]]+)\]\(((?:https?|mailto):[^\s)]+)\)`) })
	boldRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\*\*(\S(?:.*?\S)?)\*\*|__(\S(?:.*?\S)?)__`) })
	italicRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|[^\w*])\*(\S(?:[^*]*?\S)?)\*($|[^\w*])`) })
	strikeRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`~~(\S(?:.*?\S)?)~~`) })
	// placeholders for converted bold, kept away from the italic pass.
	boldOpen, boldClose = "\x00B", "\x00b"
)

// convertLine converts one line outside code blocks.
func convertLine(line string) string {
	heading := false
	if m := headingRE().FindStringSubmatch(line); m != nil {
		line, heading = m[1], true
	}
	if m := bulletRE().FindStringSubmatch(line); m != nil && !heading {
		line = m[1] + "• " + line[len(m[0]):]
	}
	// Split around code spans: their text is escaped, nothing else.
	var b strings.Builder
	for rest := line; rest != ""; {
		start := strings.IndexByte(rest, '`')
		if start < 0 {
			b.WriteString(inline(rest))
			break
		}
		n := 0
		for start+n < len(rest) && rest[start+n] == '`' {
			n++
		}
		ticks := rest[start : start+n]
		end := strings.Index(rest[start+n:], ticks)
		if end < 0 {
			b.WriteString(inline(rest))
			break
		}
		b.WriteString(inline(rest[:start]))
		code := strings.TrimSpace(rest[start+n : start+n+end])
		b.WriteString("`" + escape(code) + "`")
		rest = rest[start+n+end+n:]
	}
	s := b.String()
	if heading && strings.TrimSpace(s) != "" {
		s = "*" + strings.Trim(s, "*") + "*"
	}
	return s
}

// inline converts emphasis and links in text without code spans.
func inline(s string) string {
	type link struct{ text, url string }
	var links []link
	s = linkRE().ReplaceAllStringFunc(s, func(m string) string {
		p := linkRE().FindStringSubmatch(m)
		links = append(links, link{p[1], p[2]})
		return "\x00L" + string(rune('0'+len(links)-1)) + "\x00"
	})
	s = escape(s)
	s = boldRE().ReplaceAllStringFunc(s, func(m string) string {
		p := boldRE().FindStringSubmatch(m)
		return boldOpen + p[1] + p[2] + boldClose
	})
	s = italicRE().ReplaceAllString(s, "${1}_${2}_${3}")
	s = strikeRE().ReplaceAllString(s, "~$1~")
	s = strings.NewReplacer(boldOpen, "*", boldClose, "*").Replace(s)
	for i, l := range links {
		text := strings.NewReplacer("|", "¦").Replace(inline(l.text))
		s = strings.Replace(s, "\x00L"+string(rune('0'+i))+"\x00", "<"+escape(l.url)+"|"+text+">", 1)
	}
	return s
}

// Replacers are built once: building one costs far more than using it.
var (
	mrkdwnEscaper   = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	mrkdwnUnescaper = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")
)

// escape escapes the three characters mrkdwn reserves.
func escape(s string) string { return mrkdwnEscaper.Replace(s) }

var slackLinkRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`<((?:https?|mailto):[^|>]+)(?:\|([^>]*))?>`) })

// fromMrkdwn turns what Slack sends into plain Markdown for the agent:
// links become [text](url) or the bare URL, entities are unescaped. User
// mentions (<@U123>) stay as they are.
func fromMrkdwn(s string) string {
	s = slackLinkRE().ReplaceAllStringFunc(s, func(m string) string {
		p := slackLinkRE().FindStringSubmatch(m)
		if p[2] == "" || p[2] == p[1] {
			return p[1]
		}
		return "[" + p[2] + "](" + p[1] + ")"
	})
	return mrkdwnUnescaper.Replace(s)
}
