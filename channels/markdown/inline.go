// Inline content: the children of a paragraph, heading or cell rendered by
// the Rules' hooks, with the exact source span of each emphasis, link,
// image and code span. Blocks are walked in markdown.go.

package markdown

import (
	"strings"

	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
)

// inline records the rendering of the inline content of n, which spans
// src[start:end], as one edit.
func (w *walker) inline(n ast.Node, start, end int) {
	if end <= start {
		return
	}
	w.add(start, end, w.render(n, start, end))
}

// render returns src[start:end] with the children of n rendered by the
// hooks; text between children (line breaks, container prefixes) is kept.
func (w *walker) render(n ast.Node, start, end int) string {
	var b strings.Builder
	pos := start
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		cs, ce, ok := w.span(c)
		if !ok || cs < pos || ce > end {
			continue // not locatable: its source is copied with the gap
		}
		w.write(&b, pos, cs)
		b.WriteString(w.node(c, cs, ce))
		pos = ce
	}
	if pos < end {
		w.write(&b, pos, end)
	}
	return b.String()
}

// node renders one inline node spanning src[cs:ce].
func (w *walker) node(n ast.Node, cs, ce int) string {
	switch n := n.(type) {
	case *ast.Text:
		if w.r.Text != nil {
			return w.r.Text(string(w.src[cs:ce]))
		}
		return string(w.src[cs:ce])
	case *ast.Emphasis:
		is, ie, _ := w.children(n)
		hook := w.r.Italic
		if n.Level == 2 {
			hook = w.r.Bold
		}
		return w.wrap(n, hook, cs, ce, is, ie)
	case *east.Strikethrough:
		is, ie, _ := w.children(n)
		return w.wrap(n, w.r.Strike, cs, ce, is, ie)
	case *ast.CodeSpan:
		if w.r.Code == nil {
			return string(w.src[cs:ce])
		}
		var b strings.Builder
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			if t, ok := c.(*ast.Text); ok {
				b.Write(t.Segment.Value(w.src))
			}
		}
		return w.r.Code(b.String())
	case *ast.Link:
		is, ie, _ := w.children(n)
		if w.r.Link == nil {
			return string(w.src[cs:is]) + w.render(n, is, ie) + string(w.src[ie:ce])
		}
		return w.r.Link(w.render(n, is, ie), string(n.Destination))
	case *ast.Image:
		if w.r.Image == nil {
			return string(w.src[cs:ce])
		}
		is, ie, _ := w.children(n)
		return w.r.Image(string(w.src[is:ie]), string(n.Destination))
	}
	return string(w.src[cs:ce])
}

// wrap renders an emphasis-like node: hook(inner), or its delimiters as
// written around the rendered inner text.
func (w *walker) wrap(n ast.Node, hook func(string) string, cs, ce, is, ie int) string {
	inner := w.render(n, is, ie)
	if hook == nil {
		return string(w.src[cs:is]) + inner + string(w.src[ie:ce])
	}
	return hook(inner)
}

// children is the span of n's children.
func (w *walker) children(n ast.Node) (start, end int, ok bool) {
	f, l := n.FirstChild(), n.LastChild()
	if f == nil {
		return 0, 0, false
	}
	s, _, ok1 := w.span(f)
	_, e, ok2 := w.span(l)
	return s, e, ok1 && ok2 && s <= e
}

// span locates an inline node in the source, delimiters included.
func (w *walker) span(n ast.Node) (start, end int, ok bool) {
	switch n := n.(type) {
	case *ast.Text:
		return n.Segment.Start, n.Segment.Stop, true
	case *ast.RawHTML:
		if n.Segments.Len() == 0 {
			return 0, 0, false
		}
		return n.Segments.At(0).Start, n.Segments.At(n.Segments.Len() - 1).Stop, true
	case *ast.Emphasis:
		s, e, ok := w.children(n)
		if !ok || s < n.Level || e+n.Level > len(w.src) {
			return 0, 0, false
		}
		return s - n.Level, e + n.Level, true
	case *east.Strikethrough:
		s, e, ok := w.children(n)
		if !ok {
			return 0, 0, false
		}
		for s > 0 && w.src[s-1] == '~' {
			s--
		}
		for e < len(w.src) && w.src[e] == '~' {
			e++
		}
		return s, e, true
	case *ast.CodeSpan:
		s, e, ok := w.children(n)
		if !ok {
			return 0, 0, false
		}
		// One space inside each backtick run may have been stripped.
		if s > 1 && w.src[s-1] == ' ' && w.src[s-2] == '`' {
			s--
		}
		for s > 0 && w.src[s-1] == '`' {
			s--
		}
		if e+1 < len(w.src) && w.src[e] == ' ' && w.src[e+1] == '`' {
			e++
		}
		for e < len(w.src) && w.src[e] == '`' {
			e++
		}
		return s, e, true
	case *ast.Link:
		return w.linkSpan(n, 1)
	case *ast.Image:
		return w.linkSpan(n, 2)
	}
	return 0, 0, false
}

// linkSpan locates [text](dest), [text][ref] or [text]; open is the
// length of the opener ("[" or "![").
func (w *walker) linkSpan(n ast.Node, open int) (start, end int, ok bool) {
	s, e, ok := w.children(n)
	if !ok || s < open || e >= len(w.src) || w.src[e] != ']' {
		return 0, 0, false
	}
	start, end = s-open, e+1
	if end >= len(w.src) {
		return start, end, true
	}
	closer := byte(0)
	switch w.src[end] {
	case '(':
		closer = ')'
	case '[':
		closer = ']'
	default:
		return start, end, true
	}
	depth := 0
	for i := end; i < len(w.src); i++ {
		switch w.src[i] {
		case '\\':
			i++
		case w.src[end]:
			depth++
		case closer:
			depth--
			if depth == 0 {
				return start, i + 1, true
			}
		}
	}
	return 0, 0, false
}
