package email

import (
	"fmt"
	"html"
	"regexp"
	"strings"
	"unicode/utf8"

	xhtml "golang.org/x/net/html"
)

// htmlToText renders an HTML mail body as plain text: block elements break
// lines, list items get "- ", links keep their address in parentheses,
// images their alt text; scripts, styles and the head are dropped. It
// never fails: broken markup gives the text the tokenizer could find.
func htmlToText(s string) string {
	z := xhtml.NewTokenizer(strings.NewReader(s))
	var b strings.Builder
	skip := 0 // inside script/style/head
	pre := 0
	var href []string // open <a> targets
	newline := func(n int) {
		cur := b.String()
		have := len(cur) - len(strings.TrimRight(cur, "\n"))
		if len(strings.TrimSpace(cur)) == 0 {
			return
		}
		for ; have < n; have++ {
			b.WriteByte('\n')
		}
	}
	for {
		tt := z.Next()
		switch tt {
		case xhtml.ErrorToken:
			return cleanText(b.String())
		case xhtml.TextToken:
			if skip > 0 {
				continue
			}
			t := string(z.Text())
			if pre == 0 {
				t = collapseSpace(t)
				if strings.HasSuffix(b.String(), "\n") || b.Len() == 0 {
					t = strings.TrimLeft(t, " ")
				}
			}
			b.WriteString(t)
		case xhtml.StartTagToken, xhtml.EndTagToken, xhtml.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			tag := string(name)
			attrs := map[string]string{}
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				attrs[string(k)] = string(v)
			}
			start := tt != xhtml.EndTagToken
			switch tag {
			case "script", "style", "head", "title", "noscript", "template":
				if tt == xhtml.StartTagToken {
					skip++
				} else if tt == xhtml.EndTagToken && skip > 0 {
					skip--
				}
				continue
			}
			if skip > 0 {
				continue
			}
			switch tag {
			case "br":
				b.WriteByte('\n')
			case "p", "div", "table", "blockquote", "section", "article", "header", "footer", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6":
				newline(2)
			case "tr":
				newline(1)
			case "td", "th":
				if start && !strings.HasSuffix(b.String(), "\n") {
					b.WriteString(" ")
				}
			case "li":
				if start {
					newline(1)
					b.WriteString("- ")
				}
			case "hr":
				newline(1)
				b.WriteString("---\n")
			case "pre":
				newline(1)
				if tt == xhtml.StartTagToken {
					pre++
				} else if tt == xhtml.EndTagToken && pre > 0 {
					pre--
				}
			case "img":
				if alt := strings.TrimSpace(attrs["alt"]); alt != "" {
					b.WriteString("[image: " + alt + "]")
				}
			case "a":
				if tt == xhtml.StartTagToken {
					href = append(href, attrs["href"])
				} else if tt == xhtml.EndTagToken && len(href) > 0 {
					h := href[len(href)-1]
					href = href[:len(href)-1]
					if (strings.HasPrefix(h, "http://") || strings.HasPrefix(h, "https://")) && !strings.HasSuffix(b.String(), h) {
						b.WriteString(" (" + h + ")")
					}
				}
			}
		}
	}
}

var spaceRe = regexp.MustCompile(`[ \t\r\n\f\v]+`)

func collapseSpace(s string) string {
	return spaceRe.ReplaceAllString(strings.ReplaceAll(s, "\u00a0", " "), " ")
}

var blankRunRe = regexp.MustCompile(`\n{3,}`)

// cleanText normalises line ends, drops trailing spaces and squeezes runs of
// blank lines.
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\u00a0")
	}
	return strings.TrimSpace(blankRunRe.ReplaceAllString(strings.Join(lines, "\n"), "\n\n"))
}

// attributionRe matches the line a mail client puts above a quoted mail
// ("On Mon, 1 Jan 2024, Alice <a@b.c> wrote:", in a few languages).
var attributionRe = regexp.MustCompile(`(?i)^(on|am|le|el|il|op)\b.*(wrote|schrieb|a écrit|escribió|ha scritto|schreef).*:$`)

// stripQuoted removes the quoted previous mail at the end of a reply (the
// agent has it in its history already): trailing "> " lines with the
// attribution line above them, or everything from an Outlook-style
// "-----Original Message-----". Quotes between the user's own lines stay.
// A mail that is nothing but a quote is left whole.
func stripQuoted(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "-----Original Message-----") || strings.HasPrefix(t, "-------- Original Message --------") {
			if kept := strings.TrimSpace(strings.Join(lines[:i], "\n")); kept != "" {
				return kept
			}
			return s
		}
	}
	end := len(lines)
	quoted := false
	for end > 0 {
		t := strings.TrimSpace(lines[end-1])
		if t == "" || strings.HasPrefix(t, ">") {
			quoted = quoted || t != ""
			end--
			continue
		}
		break
	}
	if !quoted {
		return s
	}
	if end > 0 && attributionRe.MatchString(strings.TrimSpace(lines[end-1])) {
		end--
	} else if end > 1 && strings.HasSuffix(strings.TrimSpace(lines[end-1]), "wrote:") &&
		attributionRe.MatchString(strings.TrimSpace(lines[end-2])+" "+strings.TrimSpace(lines[end-1])) {
		end -= 2 // the attribution wrapped over two lines
	}
	kept := strings.TrimSpace(strings.Join(lines[:end], "\n"))
	if kept == "" {
		return s
	}
	return kept
}

// truncate caps s at max characters (0: no cap), saying so at the end.
func truncate(s string, max int) string {
	n := utf8.RuneCountInString(s)
	if max <= 0 || n <= max {
		return s
	}
	cut := 0
	for i := range s {
		if cut == max {
			s = s[:i]
			break
		}
		cut++
	}
	return strings.TrimRight(s, " \n") + fmt.Sprintf("\n\n[… the mail goes on: %d of its %d characters shown]", max, n)
}

// replySubject is the subject of an answer: the prefix ("Re: ") before the
// original subject unless it already starts with a reply marker.
func replySubject(subject, prefix string) string {
	subject = strings.TrimSpace(subject)
	if subject == "" {
		subject = "your mail"
	}
	lower := strings.ToLower(subject)
	p := strings.ToLower(strings.TrimSpace(prefix))
	for _, marker := range []string{p, "re:", "aw:", "sv:", "antw:", "réf:"} {
		if marker != "" && strings.HasPrefix(lower, marker) {
			return subject
		}
	}
	return prefix + subject
}

// toPlain turns the agent's Markdown into a plain-text mail body: emphasis
// markers and heading hashes go, links show their address, code blocks
// stay fenced (a convention plain-text readers know) and untouched.
func toPlain(md string) string {
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	fence := ""
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if fence != "" {
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				fence = ""
			}
			continue
		}
		if f, _, ok := openingFence(t); ok {
			fence = f
			continue
		}
		if m := headingRe.FindStringSubmatch(l); m != nil {
			l = m[1]
		}
		lines[i] = plainInline(l)
	}
	return strings.Join(lines, "\n")
}

var (
	headingRe = regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
	bulletRe  = regexp.MustCompile(`^\s*[-*+]\s+(.*)$`)
	orderedRe = regexp.MustCompile(`^\s*\d{1,9}[.)]\s+(.*)$`)
	ruleRe    = regexp.MustCompile(`^\s{0,3}(?:(?:-\s*){3,}|(?:\*\s*){3,}|(?:_\s*){3,})$`)
	langRe    = regexp.MustCompile(`^[A-Za-z0-9_+#.-]{1,32}$`)
	codeRe    = regexp.MustCompile("`[^`\n]+`")
	imageRe   = regexp.MustCompile(`!\[([^\]\n]*)\]\(([^)\s]+)\)`)
	linkRe    = regexp.MustCompile(`\[([^\]\n]+)\]\(([^)\s]+)\)`)
	boldRe    = regexp.MustCompile(`\*\*([^*\n]+)\*\*|__([^_\n]+)__`)
	italicRe  = regexp.MustCompile(`(^|[^\w*])\*([^*\s][^*\n]*?)\*($|[^\w*])|(^|[^\w_])_([^_\s][^_\n]*?)_($|[^\w_])`)
	strikeRe  = regexp.MustCompile(`~~([^~\n]+)~~`)
)

// plainInline strips inline Markdown outside code spans.
func plainInline(s string) string {
	return outsideCode(s, func(t string) string {
		t = imageRe.ReplaceAllString(t, "$1 <$2>")
		t = linkRe.ReplaceAllStringFunc(t, func(m string) string {
			sm := linkRe.FindStringSubmatch(m)
			if sm[1] == sm[2] || "mailto:"+sm[1] == sm[2] {
				return sm[1]
			}
			return sm[1] + " <" + sm[2] + ">"
		})
		t = boldRe.ReplaceAllString(t, "$1$2")
		return strikeRe.ReplaceAllString(t, "$1")
	}, func(code string) string { return code })
}

// outsideCode applies text to the parts of s outside `code spans` and code
// to the spans (backticks included).
func outsideCode(s string, text, code func(string) string) string {
	var b strings.Builder
	last := 0
	for _, loc := range codeRe.FindAllStringIndex(s, -1) {
		b.WriteString(text(s[last:loc[0]]))
		b.WriteString(code(s[loc[0]:loc[1]]))
		last = loc[1]
	}
	b.WriteString(text(s[last:]))
	return b.String()
}

// openingFence reports whether line opens a fenced code block, with the
// fence (``` or ~~~, possibly longer) and the language.
func openingFence(line string) (fence, lang string, ok bool) {
	for _, ch := range []byte{'`', '~'} {
		n := 0
		for n < len(line) && line[n] == ch {
			n++
		}
		if n >= 3 {
			info := strings.TrimSpace(line[n:])
			if ch == '`' && strings.Contains(info, "`") {
				return "", "", false
			}
			lang, _, _ = strings.Cut(info, " ")
			return line[:n], lang, true
		}
	}
	return "", "", false
}

// toHTML renders the agent's Markdown as a small HTML document for the
// text/html alternative: paragraphs, headings, lists, quotes, rules, code
// blocks, tables (kept as preformatted text), and inline **bold**,
// *italic*, ~~strike~~, `code` and [links](https://...). Everything is
// escaped; links other than http, https and mailto stay text.
func toHTML(md string) string {
	lines := strings.Split(strings.ReplaceAll(strings.ToValidUTF8(md, "\uFFFD"), "\r\n", "\n"), "\n")
	var out []string
	var para []string
	flush := func() {
		if len(para) > 0 {
			out = append(out, "<p>"+strings.Join(para, "<br>\n")+"</p>")
			para = nil
		}
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		t := strings.TrimSpace(line)
		if fence, lang, ok := openingFence(t); ok {
			flush()
			var code []string
			j := i + 1
			for ; j < len(lines); j++ {
				if u := strings.TrimSpace(lines[j]); strings.HasPrefix(u, fence) && strings.Trim(u, fence[:1]) == "" {
					break
				}
				code = append(code, lines[j])
			}
			class := ""
			if langRe.MatchString(lang) {
				class = ` class="language-` + html.EscapeString(lang) + `"`
			}
			out = append(out, "<pre><code"+class+">"+html.EscapeString(strings.Join(code, "\n"))+"</code></pre>")
			i = j
			continue
		}
		switch {
		case t == "":
			flush()
		case ruleRe.MatchString(line):
			flush()
			out = append(out, "<hr>")
		case headingRe.MatchString(line):
			flush()
			level := len(t) - len(strings.TrimLeft(t, "#"))
			out = append(out, fmt.Sprintf("<h%d>%s</h%d>", level, inlineHTML(headingRe.FindStringSubmatch(line)[1]), level))
		case strings.HasPrefix(t, ">"):
			flush()
			var quote []string
			for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), ">"); i++ {
				q := strings.TrimPrefix(strings.TrimSpace(lines[i]), ">")
				quote = append(quote, inlineHTML(strings.TrimPrefix(q, " ")))
			}
			i--
			out = append(out, "<blockquote>"+strings.Join(quote, "<br>\n")+"</blockquote>")
		case bulletRe.MatchString(line) || orderedRe.MatchString(line):
			flush()
			re, tag := bulletRe, "ul"
			if !bulletRe.MatchString(line) {
				re, tag = orderedRe, "ol"
			}
			var items []string
			for ; i < len(lines) && re.MatchString(lines[i]); i++ {
				items = append(items, "<li>"+inlineHTML(re.FindStringSubmatch(lines[i])[1])+"</li>")
			}
			i--
			out = append(out, "<"+tag+">\n"+strings.Join(items, "\n")+"\n</"+tag+">")
		case strings.HasPrefix(t, "|") && i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "|"):
			flush()
			var rows []string
			for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
				rows = append(rows, lines[i])
			}
			i--
			out = append(out, "<pre>"+html.EscapeString(strings.Join(rows, "\n"))+"</pre>")
		default:
			para = append(para, inlineHTML(t))
		}
	}
	flush()
	return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"></head><body>\n" + strings.Join(out, "\n") + "\n</body></html>\n"
}

// inlineHTML escapes a line and renders its inline Markdown.
func inlineHTML(s string) string {
	return outsideCode(s, func(t string) string {
		t = html.EscapeString(t)
		t = imageRe.ReplaceAllString(t, "$1")
		t = linkRe.ReplaceAllStringFunc(t, func(m string) string {
			sm := linkRe.FindStringSubmatch(m)
			u := html.UnescapeString(sm[2])
			lu := strings.ToLower(u)
			if !strings.HasPrefix(lu, "http://") && !strings.HasPrefix(lu, "https://") && !strings.HasPrefix(lu, "mailto:") {
				return sm[1]
			}
			return `<a href="` + html.EscapeString(u) + `">` + sm[1] + "</a>"
		})
		t = boldRe.ReplaceAllString(t, "<strong>$1$2</strong>")
		t = italicRe.ReplaceAllStringFunc(t, func(m string) string {
			sm := italicRe.FindStringSubmatch(m)
			if sm[2] != "" {
				return sm[1] + "<em>" + sm[2] + "</em>" + sm[3]
			}
			return sm[4] + "<em>" + sm[5] + "</em>" + sm[6]
		})
		return strikeRe.ReplaceAllString(t, "<del>$1</del>")
	}, func(code string) string {
		return "<code>" + html.EscapeString(strings.Trim(code, "`")) + "</code>"
	})
}
