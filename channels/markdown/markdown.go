// Package markdown rewrites the Markdown the agent writes into what one chat
// platform renders. It parses with goldmark (CommonMark plus GFM
// strikethrough) and walks the tree; each platform supplies Rules, one hook
// per construct it has to change. Everything no hook changes is kept byte
// for byte as written — spacing, list markers, code blocks, line breaks —
// so a platform that renders most Markdown itself only pays for what it
// rewrites, and a reply split before formatting keeps its shape.
//
// Tables are recognised the way chat models write them, not the way GFM
// parses them: a run of lines that start with "|" and hold at least two
// pipes is a table, with or without a separator row, and it ends at the
// first line that is not such a row.
//
// Setext headings ("Title" underlined with "---") are treated as a
// paragraph followed by a rule: in chat replies the dashes are almost
// always meant as a rule, and they are kept.
//
// Render is a pure function; Rules values are read-only, so one Rules may
// be used from any number of goroutines.
package markdown

import (
	"sort"
	"strings"
	"sync"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// Rules are a platform's hooks. A nil hook keeps its construct as written.
// Hooks that take inner text get it already rendered by the other hooks.
type Rules struct {
	// Heading rewrites an ATX heading ("## Title ##"): level 1 to 6, its
	// rendered text, and the heading as written (return source to keep it).
	Heading func(level int, text, source string) string
	// Table rewrites a table: its lines as written, trimmed, separator
	// rows included.
	Table func(rows []string) string
	// CodeBlock rewrites a fenced code block: its info string's language
	// (first word), its code (every line ending in "\n"), and the block as
	// written, fences included.
	CodeBlock func(lang, code, source string) string
	// Bullet rewrites the marker ("-", "*" or "+") of a bullet list item.
	Bullet func(marker string) string
	// Quote rewrites the ">" that opens a line of a block quote.
	Quote func(marker string) string

	// Bold, Italic and Strike wrap their rendered inner text.
	Bold, Italic, Strike func(inner string) string
	// Code rewrites inline code; code is the span's text.
	Code func(code string) string
	// Link rewrites [text](url); text is rendered.
	Link func(text, url string) string
	// Image rewrites ![alt](url).
	Image func(alt, url string) string
	// Text escapes plain text (what is not markup) for the platform.
	Text func(s string) string
}

// mdParser is built on first use, so a gateway that never renders
// Markdown for a platform does not build it at start-up.
var mdParser = sync.OnceValue(func() parser.Parser {
	return goldmark.New(goldmark.WithExtensions(extension.Strikethrough)).Parser()
})

// Render rewrites md by r.
func Render(md string, r Rules) string {
	src := []byte(md)
	w := &walker{src: src, r: r}
	doc := mdParser().Parse(text.NewReader(src))
	w.markers(doc)
	w.block(doc)
	return w.apply()
}

// edit replaces src[start:end].
type edit struct {
	start, end int
	with       string
}

type walker struct {
	src   []byte
	r     Rules
	edits []edit
	// marks are one-byte replacements (list and quote markers), which may
	// sit inside a paragraph's span (a quote's second line): render
	// applies them while copying, apply the others.
	marks map[int]string
}

func (w *walker) mark(i int, with string) {
	if w.marks == nil {
		w.marks = map[int]string{}
	}
	w.marks[i] = with
}

// write copies src[from:to] to b with the marks in it applied.
func (w *walker) write(b *strings.Builder, from, to int) {
	for i := from; i < to; i++ {
		if m, ok := w.marks[i]; ok {
			b.Write(w.src[from:i])
			b.WriteString(m)
			from = i + 1
		}
	}
	b.Write(w.src[from:to])
}

func (w *walker) add(start, end int, with string) {
	if start < 0 || end < start || end > len(w.src) || string(w.src[start:end]) == with {
		return
	}
	w.edits = append(w.edits, edit{start, end, with})
}

// apply splices the edits into the source. Edits never overlap: each
// construct is edited once, at the deepest level that knows it.
func (w *walker) apply() string {
	sort.SliceStable(w.edits, func(i, j int) bool { return w.edits[i].start < w.edits[j].start })
	var b strings.Builder
	pos := 0
	for _, e := range w.edits {
		if e.start < pos {
			continue // overlapping edit: keep the first
		}
		w.write(&b, pos, e.start)
		b.WriteString(e.with)
		pos = e.end
	}
	w.write(&b, pos, len(w.src))
	return b.String()
}

// block walks block nodes and records their edits.
func (w *walker) block(n ast.Node) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Heading:
			w.heading(c)
		case *ast.Paragraph, *ast.TextBlock:
			w.paragraph(c)
		case *ast.FencedCodeBlock:
			w.fenced(c)
		case *ast.ListItem, *ast.Blockquote:
			w.block(c)
		case *ast.CodeBlock, *ast.HTMLBlock, *ast.ThematicBreak:
			// kept as written
		default:
			w.block(c)
		}
	}
}

// lineStart and lineEnd are the bounds of the line holding offset i
// (lineEnd excludes the line break).
func (w *walker) lineStart(i int) int {
	for i > 0 && w.src[i-1] != '\n' {
		i--
	}
	return i
}

func (w *walker) lineEnd(i int) int {
	for i < len(w.src) && w.src[i] != '\n' {
		i++
	}
	if i > 0 && i <= len(w.src) && w.src[i-1] == '\r' {
		i--
	}
	return i
}

func (w *walker) heading(h *ast.Heading) {
	lines := h.Lines()
	if lines.Len() == 0 {
		return
	}
	first := lines.At(0)
	start := w.lineStart(first.Start)
	hash := strings.IndexByte(string(w.src[start:first.Start]), '#')
	if hash < 0 { // setext: its text is a paragraph, the underline stays
		w.inline(h, first.Start, w.trimEnd(lines.At(lines.Len()-1).Stop))
		return
	}
	hash += start
	textEnd := w.trimEnd(lines.At(lines.Len() - 1).Stop)
	if w.r.Heading == nil {
		w.inline(h, first.Start, textEnd)
		return
	}
	end := w.lineEnd(first.Start)
	w.add(hash, end, w.r.Heading(h.Level, w.render(h, first.Start, textEnd), string(w.src[hash:end])))
}

// trimEnd drops a line break (and trailing blanks) before stop.
func (w *walker) trimEnd(stop int) int {
	for stop > 0 && strings.IndexByte(" \t\r\n", w.src[stop-1]) >= 0 {
		stop--
	}
	return stop
}

// isRow reports whether a line (trimmed) is a table row.
func isRow(line string) bool {
	return strings.HasPrefix(line, "|") && strings.Count(line, "|") >= 2
}

// paragraph renders a paragraph's inline content, or splits off its
// table rows when the platform rewrites tables.
func (w *walker) paragraph(p ast.Node) {
	lines := p.Lines()
	if lines.Len() == 0 {
		return
	}
	start, end := lines.At(0).Start, w.trimEnd(lines.At(lines.Len()-1).Stop)
	if w.r.Table == nil {
		w.inline(p, start, end)
		return
	}
	type run struct {
		table      bool
		start, end int
		rows       []string
	}
	var runs []run
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		s, e := seg.Start, w.trimEnd(seg.Stop)
		if e < s {
			e = s
		}
		line := strings.TrimSpace(string(w.src[s:e]))
		row := isRow(line)
		if len(runs) > 0 && runs[len(runs)-1].table == row {
			runs[len(runs)-1].end = e
			runs[len(runs)-1].rows = append(runs[len(runs)-1].rows, line)
			continue
		}
		runs = append(runs, run{table: row, start: s, end: e, rows: []string{line}})
	}
	if len(runs) == 1 && !runs[0].table {
		w.inline(p, start, end)
		return
	}
	for _, rn := range runs {
		if rn.table {
			w.add(rn.start, rn.end, w.r.Table(rn.rows))
			continue
		}
		// Text lines around a table: render them on their own (the
		// table's lines broke the paragraph's inline structure anyway).
		w.add(rn.start, rn.end, Render(string(w.src[rn.start:rn.end]), w.r))
	}
}

func (w *walker) fenced(c *ast.FencedCodeBlock) {
	if w.r.CodeBlock == nil {
		return
	}
	var open int
	switch {
	case c.Info != nil:
		open = w.lineStart(c.Info.Segment.Start)
	case c.Lines().Len() > 0:
		open = w.lineStart(c.Lines().At(0).Start)
		if open == 0 {
			return
		}
		open = w.lineStart(open - 1)
	default:
		return // an empty block without info: nothing to rewrite
	}
	// Skip the container prefix ("> ", list indentation) before the fence.
	for open < len(w.src) && w.src[open] != '`' && w.src[open] != '~' {
		open++
	}
	var code strings.Builder
	last := w.lineEnd(open)
	for i := 0; i < c.Lines().Len(); i++ {
		seg := c.Lines().At(i)
		code.Write(seg.Value(w.src))
		last = w.lineEnd(seg.Start)
	}
	end := last
	// The closing fence is the next line, when there is one.
	if next := last + 1; next < len(w.src) {
		for next < len(w.src) && w.src[next] == '\r' {
			next++
		}
		line := strings.TrimSpace(string(w.src[next:w.lineEnd(next)]))
		if fence := w.src[open]; strings.Trim(line, string(fence)) == "" && strings.Count(line, string(fence)) >= 3 {
			end = w.lineEnd(next)
		}
	}
	s := code.String()
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	w.add(open, end, w.r.CodeBlock(string(c.Language(w.src)), s, string(w.src[open:end])))
}

// markers marks the bullet and quote markers to rewrite.
func (w *walker) markers(doc ast.Node) {
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			switch n := n.(type) {
			case *ast.ListItem:
				w.bullet(n)
			case *ast.Blockquote:
				w.quote(n)
			}
		}
		return ast.WalkContinue, nil
	})
}

// bullet rewrites the marker of a bullet list item.
func (w *walker) bullet(li *ast.ListItem) {
	list, ok := li.Parent().(*ast.List)
	if w.r.Bullet == nil || !ok || list.IsOrdered() {
		return
	}
	first := firstSegment(li)
	if first < 0 {
		return
	}
	i := first - 1
	for i >= 0 && (w.src[i] == ' ' || w.src[i] == '\t') {
		i--
	}
	if i < 0 || w.src[i] != list.Marker {
		return
	}
	w.mark(i, w.r.Bullet(string(list.Marker)))
}

// quote rewrites the ">" opening each line of a block quote.
func (w *walker) quote(q *ast.Blockquote) {
	if w.r.Quote == nil {
		return
	}
	seen := map[int]bool{}
	_ = ast.Walk(q, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering || n.Type() != ast.TypeBlock {
			return ast.WalkContinue, nil
		}
		lines := n.Lines()
		for i := 0; i < lines.Len(); i++ {
			ls := w.lineStart(lines.At(i).Start)
			if seen[ls] {
				continue
			}
			seen[ls] = true
			if j := strings.IndexByte(string(w.src[ls:lines.At(i).Start]), '>'); j >= 0 {
				w.mark(ls+j, w.r.Quote(">"))
			}
		}
		return ast.WalkContinue, nil
	})
}

// firstSegment is where the first text of n starts, or -1.
func firstSegment(n ast.Node) int {
	pos := -1
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		if c.Type() == ast.TypeBlock && c.Lines().Len() > 0 {
			pos = c.Lines().At(0).Start
			return ast.WalkStop, nil
		}
		return ast.WalkContinue, nil
	})
	return pos
}

// Plain writes Markdown as plain text, for platforms that render none of
// it (LINE, Signal, OneBot/QQ): emphasis markers go, links and images show
// their address, headings lose their hashes; code blocks, lists, quotes and
// tables stay as written (they read well as text).
var Plain = Rules{
	Heading: func(_ int, text, _ string) string { return text },
	Bold:    keepInner,
	Italic:  keepInner,
	Strike:  keepInner,
	Link: func(text, url string) string {
		if text == "" || text == url || strings.TrimPrefix(url, "mailto:") == text {
			return url
		}
		return text + " (" + url + ")"
	},
	Image: func(alt, url string) string {
		if alt == "" {
			return url
		}
		return alt + " (" + url + ")"
	},
}

func keepInner(inner string) string { return inner }

// PlainText renders md with Plain and trims the white space around it.
func PlainText(md string) string { return strings.TrimSpace(Render(md, Plain)) }
