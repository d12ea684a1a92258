package whatsapp

import (
	"regexp"
	"strings"
	"sync"
)

var (
	// Compiled on first use: a process without this channel never builds them.
	reBold    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\*\*(.+?)\*\*|__(.+?)__`) })
	reItalic  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|[^*\w])\*([^*\n]+?)\*([^*\w]|$)`) })
	reStrike  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`~~(.+?)~~`) })
	reHeading = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*$`) })
	reLink    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\[([^\]]+)\]\((https?://[^)\s]+)\)`) })
	reBullet  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^(\s*)[*+]\s+`) })
)

// ToWhatsApp converts Markdown to WhatsApp's formatting: *bold*, _italic_,
// ~strike~, ```code```; headings become bold lines, links "text (url)".
// Code is left exactly as written.
func ToWhatsApp(md string) string {
	var out strings.Builder
	parts := strings.Split(md, "```")
	for i, p := range parts {
		if i > 0 {
			out.WriteString("```")
		}
		if i%2 == 1 { // inside a fence: drop the language tag line only
			if nl := strings.IndexByte(p, '\n'); nl >= 0 && !strings.ContainsAny(p[:nl], " \t") {
				p = p[nl+1:]
			}
			out.WriteString(p)
			continue
		}
		out.WriteString(inline(p))
	}
	return out.String()
}

func inline(s string) string {
	// Inline code spans stay as they are.
	segs := strings.Split(s, "`")
	for i := 0; i < len(segs); i += 2 {
		t := segs[i]
		t = reHeading().ReplaceAllString(t, "**$1**")
		t = reBullet().ReplaceAllString(t, "${1}• ")
		t = reItalic().ReplaceAllString(t, "${1}_${2}_${3}")
		t = reBold().ReplaceAllStringFunc(t, func(m string) string {
			return "*" + m[2:len(m)-2] + "*"
		})
		t = reStrike().ReplaceAllString(t, "~$1~")
		t = reLink().ReplaceAllString(t, "$1 ($2)")
		segs[i] = t
	}
	return strings.Join(segs, "`")
}
