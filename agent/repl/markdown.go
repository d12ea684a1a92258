package repl

import (
	"regexp"
	"strings"
	"sync"
)

// ANSI styles used by the renderer.
const (
	ansiReset   = "\x1b[0m"
	ansiBold    = "\x1b[1m"
	ansiItalic  = "\x1b[3m"
	ansiDim     = "\x1b[2m"
	ansiCode    = "\x1b[36m"   // cyan
	ansiHeading = "\x1b[1;35m" // bold magenta
	ansiLink    = "\x1b[4;34m" // underlined blue
	ansiQuote   = "\x1b[2;3m"  // dim italic
)

// Renderer turns Markdown into ANSI-styled terminal text one line at a time,
// so a streamed reply is rendered as it arrives. It keeps the state that
// spans lines (inside a fenced code block or not).
type Renderer struct {
	inCode bool
	buf    strings.Builder
}

var (
	// Compiled on first use: a process without the CLI never builds them.
	reBold   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\*\*([^*]+)\*\*|__([^_]+)__`) })
	reItalic = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(^|[^*\w])\*([^*\s][^*]*)\*|(^|[^_\w])_([^_\s][^_]*)_`)
	})
	reInlineCode = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("`([^`]+)`") })
	reLink       = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[([^\]]+)\]\(([^)\s]+)\)`) })
	reHeading    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(#{1,6})\s+(.*)$`) })
	reBullet     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\s*)[-*+]\s+(.*)$`) })
)

// Write adds streamed text and returns the rendered complete lines.
func (r *Renderer) Write(s string) string {
	r.buf.WriteString(s)
	text := r.buf.String()
	i := strings.LastIndexByte(text, '\n')
	if i < 0 {
		return ""
	}
	r.buf.Reset()
	r.buf.WriteString(text[i+1:])
	var out strings.Builder
	for _, line := range strings.Split(text[:i], "\n") {
		out.WriteString(r.line(line))
		out.WriteByte('\n')
	}
	return out.String()
}

// Flush renders what remains of an unfinished last line and resets the
// renderer for the next reply.
func (r *Renderer) Flush() string {
	rest := r.buf.String()
	r.buf.Reset()
	out := ""
	if rest != "" {
		out = r.line(rest)
	}
	r.inCode = false
	return out
}

// Render renders a whole text at once.
func Render(s string) string {
	var r Renderer
	out := r.Write(s)
	return out + r.Flush()
}

func (r *Renderer) line(l string) string {
	trimmed := strings.TrimSpace(l)
	if strings.HasPrefix(trimmed, "```") {
		r.inCode = !r.inCode
		lang := strings.TrimPrefix(trimmed, "```")
		if r.inCode && lang != "" {
			return ansiDim + "┌ " + lang + ansiReset
		}
		return ansiDim + "└" + ansiReset
	}
	if r.inCode {
		return ansiCode + "  " + l + ansiReset
	}
	if m := reHeading().FindStringSubmatch(l); m != nil {
		return ansiHeading + inline(m[2]) + ansiReset
	}
	if m := reBullet().FindStringSubmatch(l); m != nil {
		return m[1] + "• " + inline(m[2])
	}
	if strings.HasPrefix(trimmed, ">") {
		return ansiQuote + "│ " + inline(strings.TrimSpace(strings.TrimPrefix(trimmed, ">"))) + ansiReset
	}
	return inline(l)
}

// inline styles code spans first (their content is left alone), then links,
// bold and italic.
func inline(s string) string {
	var out strings.Builder
	last := 0
	for _, loc := range reInlineCode().FindAllStringSubmatchIndex(s, -1) {
		out.WriteString(styleText(s[last:loc[0]]))
		out.WriteString(ansiCode + s[loc[2]:loc[3]] + ansiReset)
		last = loc[1]
	}
	out.WriteString(styleText(s[last:]))
	return out.String()
}

func styleText(s string) string {
	s = reLink().ReplaceAllString(s, "$1 ("+ansiLink+"$2"+ansiReset+")")
	s = reBold().ReplaceAllStringFunc(s, func(m string) string {
		return ansiBold + m[2:len(m)-2] + ansiReset
	})
	s = reItalic().ReplaceAllString(s, "$1$3"+ansiItalic+"$2$4"+ansiReset)
	return s
}
