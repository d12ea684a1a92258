package web

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// markdown renders an HTML subtree as Markdown: headings, paragraphs,
// lists, links, images, emphasis, code, quotes and tables. It is meant for
// a model to read, not for round-tripping.
func markdown(n *html.Node, base *url.URL) string {
	c := &mdConv{base: base}
	out := strings.Join(c.blocks(n, 0), "\n\n")
	return strings.TrimSpace(blankRuns().ReplaceAllString(out, "\n\n"))
}

var (
	blankRuns  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\n{3,}`) })
	spaceRuns  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[ \t\r\n\f]+`) })
	lineSpaces = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(` *\n *`) })
	multiSpace = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(` {2,}`) })
)

type mdConv struct{ base *url.URL }

// maxMDDepth bounds recursion on pathological nesting.
const maxMDDepth = 200

var skipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true, atom.Svg: true, atom.Head: true,
	atom.Iframe: true, atom.Object: true, atom.Button: true, atom.Select: true, atom.Input: true, atom.Textarea: true,
	atom.Form: true, atom.Nav: true, atom.Canvas: true,
}

var blockTags = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true, atom.Body: true, atom.Details: true,
	atom.Dd: true, atom.Div: true, atom.Dl: true, atom.Dt: true, atom.Fieldset: true, atom.Figcaption: true, atom.Figure: true,
	atom.Footer: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
	atom.Header: true, atom.Hr: true, atom.Html: true, atom.Li: true, atom.Main: true, atom.Ol: true, atom.P: true,
	atom.Pre: true, atom.Section: true, atom.Summary: true, atom.Table: true, atom.Ul: true,
}

func isBlock(n *html.Node) bool {
	return n.Type == html.ElementNode && (blockTags[n.DataAtom] || skipped[n.DataAtom])
}

// blocks renders n's children: runs of inline content become paragraphs.
func (c *mdConv) blocks(n *html.Node, depth int) []string {
	if depth > maxMDDepth {
		return nil
	}
	var out []string
	var para strings.Builder
	flush := func() {
		if t := tidyInline(para.String()); t != "" {
			out = append(out, t)
		}
		para.Reset()
	}
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		if isBlock(ch) {
			flush()
			out = append(out, c.block(ch, depth+1)...)
			continue
		}
		para.WriteString(c.inline(ch, depth+1))
	}
	flush()
	return out
}

func (c *mdConv) block(n *html.Node, depth int) []string {
	if skipped[n.DataAtom] {
		return nil
	}
	switch n.DataAtom {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		level := int(n.Data[1] - '0')
		if t := tidyInline(c.inlineChildren(n, depth)); t != "" {
			return []string{strings.Repeat("#", level) + " " + strings.ReplaceAll(t, "\n", " ")}
		}
		return nil
	case atom.Pre:
		code := strings.Trim(textContent(n), "\n")
		if code == "" {
			return nil
		}
		return []string{"```" + codeLanguage(n) + "\n" + code + "\n```"}
	case atom.Ul, atom.Ol:
		if l := c.list(n, depth, 0); l != "" {
			return []string{l}
		}
		return nil
	case atom.Blockquote:
		inner := strings.Join(c.blocks(n, depth), "\n\n")
		if inner == "" {
			return nil
		}
		return []string{"> " + strings.ReplaceAll(inner, "\n", "\n> ")}
	case atom.Hr:
		return []string{"---"}
	case atom.Table:
		if t := c.table(n, depth); t != "" {
			return []string{t}
		}
		return nil
	}
	return c.blocks(n, depth)
}

func (c *mdConv) inlineChildren(n *html.Node, depth int) string {
	var sb strings.Builder
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		if isBlock(ch) {
			sb.WriteString(" " + strings.Join(c.block(ch, depth+1), " ") + " ")
			continue
		}
		sb.WriteString(c.inline(ch, depth+1))
	}
	return sb.String()
}

func (c *mdConv) inline(n *html.Node, depth int) string {
	if depth > maxMDDepth {
		return ""
	}
	switch n.Type {
	case html.TextNode:
		return spaceRuns().ReplaceAllString(n.Data, " ")
	case html.ElementNode:
	default:
		return ""
	}
	if skipped[n.DataAtom] {
		return ""
	}
	switch n.DataAtom {
	case atom.Br:
		return "\n"
	case atom.A:
		text := strings.TrimSpace(c.inlineChildren(n, depth))
		if text == "" {
			return ""
		}
		raw := strings.TrimSpace(attr(n, "href"))
		href := c.resolve(raw)
		if href == "" || strings.HasPrefix(raw, "#") {
			return text
		}
		return "[" + strings.ReplaceAll(text, "\n", " ") + "](" + href + ")"
	case atom.Img:
		src := c.resolve(attr(n, "src"))
		if src == "" || strings.HasPrefix(src, "data:") {
			return ""
		}
		return "![" + strings.TrimSpace(attr(n, "alt")) + "](" + src + ")"
	case atom.Strong, atom.B:
		return wrapInline(c.inlineChildren(n, depth), "**")
	case atom.Em, atom.I:
		return wrapInline(c.inlineChildren(n, depth), "*")
	case atom.Del, atom.S:
		return wrapInline(c.inlineChildren(n, depth), "~~")
	case atom.Code, atom.Kbd, atom.Samp:
		t := spaceRuns().ReplaceAllString(textContent(n), " ")
		if strings.TrimSpace(t) == "" {
			return t
		}
		return "`" + strings.TrimSpace(t) + "`"
	}
	return c.inlineChildren(n, depth)
}

// wrapInline puts marks around text, keeping surrounding spaces outside.
func wrapInline(text, mark string) string {
	t := strings.TrimSpace(text)
	if t == "" {
		return text
	}
	lead := text[:len(text)-len(strings.TrimLeft(text, " "))]
	trail := text[len(strings.TrimRight(text, " ")):]
	return lead + mark + t + mark + trail
}

func (c *mdConv) list(n *html.Node, depth, level int) string {
	var lines []string
	i := 1
	for li := n.FirstChild; li != nil; li = li.NextSibling {
		if li.Type != html.ElementNode || li.DataAtom != atom.Li {
			continue
		}
		marker := "- "
		if n.DataAtom == atom.Ol {
			marker = fmt.Sprintf("%d. ", i)
		}
		i++
		var text strings.Builder
		var nested []string
		for ch := li.FirstChild; ch != nil; ch = ch.NextSibling {
			switch {
			case ch.Type == html.ElementNode && (ch.DataAtom == atom.Ul || ch.DataAtom == atom.Ol):
				if l := c.list(ch, depth+1, level+1); l != "" {
					nested = append(nested, l)
				}
			case isBlock(ch):
				text.WriteString(" " + strings.Join(c.block(ch, depth+1), " ") + " ")
			default:
				text.WriteString(c.inline(ch, depth+1))
			}
		}
		item := strings.ReplaceAll(tidyInline(text.String()), "\n", " ")
		lines = append(lines, strings.Repeat("  ", level)+marker+item)
		lines = append(lines, nested...)
	}
	return strings.Join(lines, "\n")
}

func (c *mdConv) table(n *html.Node, depth int) string {
	var rows [][]string
	var walk func(*html.Node)
	walk = func(x *html.Node) {
		for ch := x.FirstChild; ch != nil; ch = ch.NextSibling {
			if ch.Type != html.ElementNode {
				continue
			}
			switch ch.DataAtom {
			case atom.Tr:
				var row []string
				for cell := ch.FirstChild; cell != nil; cell = cell.NextSibling {
					if cell.Type == html.ElementNode && (cell.DataAtom == atom.Td || cell.DataAtom == atom.Th) {
						t := strings.ReplaceAll(tidyInline(c.inlineChildren(cell, depth+1)), "\n", " ")
						row = append(row, strings.ReplaceAll(t, "|", `\|`))
					}
				}
				if len(row) > 0 {
					rows = append(rows, row)
				}
			case atom.Thead, atom.Tbody, atom.Tfoot:
				walk(ch)
			}
		}
	}
	walk(n)
	if len(rows) == 0 {
		return ""
	}
	width := 0
	for _, r := range rows {
		width = max(width, len(r))
	}
	var sb strings.Builder
	for i, r := range rows {
		for len(r) < width {
			r = append(r, "")
		}
		sb.WriteString("| " + strings.Join(r, " | ") + " |\n")
		if i == 0 {
			sb.WriteString("|" + strings.Repeat(" --- |", width) + "\n")
		}
	}
	return strings.TrimRight(sb.String(), "\n")
}

func (c *mdConv) resolve(ref string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" || strings.HasPrefix(strings.ToLower(ref), "javascript:") {
		return ""
	}
	u, err := url.Parse(ref)
	if err != nil {
		return ""
	}
	if c.base != nil {
		u = c.base.ResolveReference(u)
	}
	return u.String()
}

// tidyInline trims spaces around line breaks and at the ends.
func tidyInline(s string) string {
	return strings.TrimSpace(lineSpaces().ReplaceAllString(multiSpace().ReplaceAllString(s, " "), "\n"))
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func textContent(n *html.Node) string {
	var sb strings.Builder
	var walk func(*html.Node, int)
	walk = func(x *html.Node, depth int) {
		if depth > maxMDDepth {
			return
		}
		if x.Type == html.TextNode {
			sb.WriteString(x.Data)
		}
		if x.Type == html.ElementNode && x.DataAtom == atom.Br {
			sb.WriteString("\n")
		}
		for ch := x.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch, depth+1)
		}
	}
	walk(n, 0)
	return sb.String()
}

// codeLanguage reads "language-go" style classes on pre or its code child.
func codeLanguage(n *html.Node) string {
	classes := attr(n, "class")
	if ch := n.FirstChild; ch != nil && ch.Type == html.ElementNode && ch.DataAtom == atom.Code {
		classes += " " + attr(ch, "class")
	}
	for _, cl := range strings.Fields(classes) {
		if lang, ok := strings.CutPrefix(cl, "language-"); ok {
			return lang
		}
		if lang, ok := strings.CutPrefix(cl, "lang-"); ok {
			return lang
		}
	}
	return ""
}
