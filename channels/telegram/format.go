package telegram

import (
	"html"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// toHTML converts the agent's Markdown to the HTML subset Telegram renders
// (parse_mode=HTML): **bold**, *italic* / _italic_, ~~strike~~, `code`,
// fenced code blocks as <pre><code class="language-x">, [links](url),
// headings as bold lines, "- " bullets as "•", > quotes as <blockquote>,
// tables as a <pre> block. Everything else is text with <, > and & escaped.
//
// The output is always well-formed: every tag is opened and closed by the
// same call, so whatever the input, tags balance (a Markdown delimiter
// without its partner stays a literal character).
func toHTML(md string) string {
	md = strings.ToValidUTF8(md, "\uFFFD")
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if fence, lang, ok := openingFence(trimmed); ok {
			var code []string
			j := i + 1
			for ; j < len(lines); j++ {
				if t := strings.TrimSpace(lines[j]); strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
					break
				}
				code = append(code, lines[j])
			}
			out = append(out, preBlock(strings.Join(code, "\n"), lang))
			i = j
			continue
		}
		if strings.HasPrefix(trimmed, ">") {
			var quote []string
			for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), ">"); i++ {
				q := strings.TrimPrefix(strings.TrimSpace(lines[i]), ">")
				quote = append(quote, inline(strings.TrimPrefix(q, " "), 0))
			}
			i--
			out = append(out, "<blockquote>"+strings.Join(quote, "\n")+"</blockquote>")
			continue
		}
		if isTableRow(trimmed) && i+1 < len(lines) && isTableSeparator(strings.TrimSpace(lines[i+1])) {
			var rows [][]string
			for ; i < len(lines) && isTableRow(strings.TrimSpace(lines[i])); i++ {
				if t := strings.TrimSpace(lines[i]); !isTableSeparator(t) {
					rows = append(rows, tableCells(t))
				}
			}
			i--
			out = append(out, preBlock(layoutTable(rows), ""))
			continue
		}
		out = append(out, blockLine(line))
	}
	return strings.Join(out, "\n")
}

var (
	// Compiled on first use: a gateway that has not formatted a reply yet
	// (or runs without Telegram) has not built them.
	headingRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$`) })
	bulletRe  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\s*)[-*+]\s+(.*)$`) })
	orderedRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\s*)(\d{1,9})([.)])\s+(.*)$`) })
	ruleRe    = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^\s{0,3}(?:(?:-\s*){3,}|(?:\*\s*){3,}|(?:_\s*){3,})$`)
	})
	langRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_+#.-]{1,32}$`) })
)

// blockLine converts one line outside code blocks, quotes and tables.
func blockLine(line string) string {
	switch {
	case ruleRe().MatchString(line):
		return "――――――――"
	case headingRe().MatchString(line):
		text := headingRe().FindStringSubmatch(line)[1]
		if text == "" {
			return ""
		}
		return "<b>" + inline(text, 0) + "</b>"
	case bulletRe().MatchString(line):
		m := bulletRe().FindStringSubmatch(line)
		return m[1] + "• " + inline(m[2], 0)
	case orderedRe().MatchString(line):
		m := orderedRe().FindStringSubmatch(line)
		return m[1] + m[2] + m[3] + " " + inline(m[4], 0)
	}
	return inline(line, 0)
}

// openingFence reports whether line opens a fenced code block, with the
// fence (``` or ~~~, possibly longer) and the language.
func openingFence(line string) (fence, lang string, ok bool) {
	for _, ch := range []string{"`", "~"} {
		n := 0
		for n < len(line) && line[n] == ch[0] {
			n++
		}
		if n >= 3 {
			info := strings.TrimSpace(line[n:])
			if ch == "`" && strings.Contains(info, "`") {
				return "", "", false
			}
			lang, _, _ = strings.Cut(info, " ")
			return line[:n], lang, true
		}
	}
	return "", "", false
}

func preBlock(code, lang string) string {
	if langRe().MatchString(lang) {
		return `<pre><code class="language-` + html.EscapeString(lang) + `">` + escape(code) + "</code></pre>"
	}
	return "<pre>" + escape(code) + "</pre>"
}

func isTableRow(line string) bool {
	return len(line) >= 2 && strings.HasPrefix(line, "|") && strings.Count(line, "|") >= 2
}

// Compiled on first use: a process without this channel never builds it.
var separatorRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\|?(\s*:?-{2,}:?\s*\|)+\s*(:?-{2,}:?\s*)?\|?$`) })

func isTableSeparator(line string) bool { return separatorRe().MatchString(line) }

func tableCells(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	cells := strings.Split(line, "|")
	for i, c := range cells {
		cells[i] = stripInline(strings.TrimSpace(c))
	}
	return cells
}

// stripInline removes the Markdown emphasis markers a table cell may have
// (a <pre> block shows them literally).
func stripInline(s string) string { return inlineMarkers.Replace(s) }

var inlineMarkers = strings.NewReplacer("**", "", "__", "", "`", "")

// layoutTable pads the cells into aligned columns.
func layoutTable(rows [][]string) string {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for ri, r := range rows {
		if ri > 0 {
			b.WriteByte('\n')
		}
		for i, c := range r {
			if i > 0 {
				b.WriteString(" | ")
			}
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)))
			}
		}
	}
	return b.String()
}

// htmlEscaper is built once: a Replacer builds its lookup tables on first
// use, which costs far more than the replacing.
var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// escape makes text safe inside Telegram HTML.
func escape(s string) string { return htmlEscaper.Replace(s) }

// maxDepth bounds the nesting of inline formatting, so hostile input
// cannot recurse without end.
const maxDepth = 16

// inline converts emphasis, code spans and links in one line (or one
// delimited span of it). depth grows with nesting; links are not nested.
func inline(s string, depth int) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]):
			b.WriteString(escape(s[i+1 : i+2]))
			i += 2
			continue
		case c == '`':
			if n, inner, ok := codeSpan(s[i:]); ok {
				b.WriteString("<code>" + escape(inner) + "</code>")
				i += n
				continue
			}
			n := runLen(s[i:], '`')
			b.WriteString(s[i : i+n])
			i += n
			continue
		case (c == '[' || (c == '!' && strings.HasPrefix(s[i+1:], "["))) && depth >= 0:
			start := i
			if c == '!' {
				start++
			}
			if n, text, href, ok := link(s[start:]); ok {
				if text == "" {
					text = href
				}
				// Link text is formatted but never holds another link:
				// a negative depth marks "inside a link".
				d := -(depth + 1)
				b.WriteString(`<a href="` + html.EscapeString(href) + `">` + inline(text, d) + "</a>")
				i = start + n
				continue
			}
		case (c == '*' || c == '_' || c == '~') && abs(depth) < maxDepth:
			if n, tag, inner, ok := emphasis(s, i); ok {
				next := depth + 1
				if depth < 0 {
					next = depth - 1
				}
				b.WriteString("<" + tag + ">" + inline(inner, next) + "</" + tag + ">")
				i += n
				continue
			}
			n := runLen(s[i:], c)
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(escape(s[i : i+size]))
		}
		i += size
	}
	return b.String()
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// runLen counts how often c repeats at the start of s.
func runLen(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

// codeSpan parses a `code` span at the start of s.
func codeSpan(s string) (n int, inner string, ok bool) {
	ticks := runLen(s, '`')
	for j := ticks; j < len(s); {
		k := strings.IndexByte(s[j:], '`')
		if k < 0 {
			return 0, "", false
		}
		j += k
		if m := runLen(s[j:], '`'); m == ticks {
			inner = s[ticks:j]
			if len(inner) >= 2 && inner[0] == ' ' && inner[len(inner)-1] == ' ' && strings.TrimSpace(inner) != "" {
				inner = inner[1 : len(inner)-1]
			}
			if inner == "" {
				return 0, "", false
			}
			return j + m, inner, true
		} else {
			j += m
		}
	}
	return 0, "", false
}

// link parses [text](url) at the start of s; only web, mail and tg links
// are kept.
func link(s string) (n int, text, href string, ok bool) {
	depth := 0
	closeText := -1
	for j := 0; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				closeText = j
			}
		}
		if closeText >= 0 {
			break
		}
	}
	if closeText < 0 || !strings.HasPrefix(s[closeText+1:], "(") {
		return 0, "", "", false
	}
	rest := s[closeText+2:]
	end := strings.IndexByte(rest, ')')
	if end < 0 {
		return 0, "", "", false
	}
	href = strings.TrimSpace(rest[:end])
	if h, _, found := strings.Cut(href, " "); found {
		href = h // drop a "title"
	}
	lower := strings.ToLower(href)
	if !(strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://") || strings.HasPrefix(lower, "mailto:") || strings.HasPrefix(lower, "tg://")) {
		return 0, "", "", false
	}
	return closeText + 2 + end + 1, s[1:closeText], href, true
}

// emphasis parses a delimited span starting at s[i]: ** or __ (bold),
// ~~ (strike), * or _ (italic). Underscores only count at word boundaries,
// so snake_case stays as it is.
func emphasis(s string, i int) (n int, tag, inner string, ok bool) {
	c := s[i]
	width := 1
	if strings.HasPrefix(s[i:], string([]byte{c, c})) {
		width = 2
	}
	if c == '~' && width == 1 {
		return 0, "", "", false
	}
	if c == '_' && i > 0 && isWordByte(s[i-1]) {
		return 0, "", "", false
	}
	delim := s[i : i+width]
	body := s[i+width:]
	if body == "" || unicode.IsSpace(rune(body[0])) || body[0] == c {
		return 0, "", "", false
	}
	for j := 1; j < len(body); j++ {
		if !strings.HasPrefix(body[j:], delim) || unicode.IsSpace(rune(body[j-1])) {
			continue
		}
		if width == 2 {
			// In "***" the closer is the last two: "**a *b***".
			for j+width < len(body) && body[j+width] == c {
				j++
			}
		}
		after := j + width
		if width == 1 && after < len(body) && body[after] == c {
			continue // part of a longer run: not our closer
		}
		if c == '_' && after < len(body) && isWordByte(body[after]) {
			continue
		}
		switch {
		case c == '~':
			tag = "s"
		case width == 2:
			tag = "b"
		default:
			tag = "i"
		}
		return width + after, tag, body[:j], true
	}
	return 0, "", "", false
}

func isWordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= 0x80
}

func isASCIIPunct(b byte) bool {
	return strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", b) >= 0
}
