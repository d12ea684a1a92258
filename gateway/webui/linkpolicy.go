package webui

import (
	"bytes"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// linkPolicy is the goldmark AST transformer that decides which links and
// images of a message reach the page: those whose URL is relative or uses
// http, https or mailto (images: http, https or a data: image goldmark
// accepts) keep their target, with rel (and target for absolute links) set
// the way a page showing other people's text should; every other one is
// replaced by its text, so `javascript:`, `vbscript:`, `data:text/html` and
// schemes a browser may hand to another program never become clickable.
type linkPolicy struct{}

var (
	relAttr     = []byte("rel")
	targetAttr  = []byte("target")
	relLocal    = []byte("nofollow noreferrer")
	relAbsolute = []byte("nofollow noreferrer noopener")
	targetBlank = []byte("_blank")
)

// Transform implements parser.ASTTransformer.
func (linkPolicy) Transform(doc *ast.Document, reader text.Reader, _ parser.Context) {
	src := reader.Source()
	var unlink []ast.Node
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Link:
			if !markLink(n, n.Destination, false) {
				unlink = append(unlink, n)
			}
		case *ast.AutoLink:
			url := n.URL(src)
			if n.AutoLinkType == ast.AutoLinkEmail {
				return ast.WalkContinue, nil // rendered as mailto:
			}
			if !markLink(n, url, false) {
				unlink = append(unlink, n)
			}
		case *ast.Image:
			if !markLink(n, n.Destination, true) {
				unlink = append(unlink, n)
			}
		}
		return ast.WalkContinue, nil
	})
	for _, n := range unlink {
		replaceByText(n, src)
	}
}

// markLink reports whether dest may stay a link (or image source) and, for
// links, sets rel and target.
func markLink(n ast.Node, dest []byte, image bool) bool {
	scheme, absolute, ok := urlScheme(util.URLEscape(dest, true))
	if !ok {
		return false
	}
	switch scheme {
	case "", "http", "https", "mailto":
	case "data":
		if !image || html.IsDangerousURL(util.URLEscape(dest, true)) {
			return false
		}
	default:
		return false
	}
	if image {
		return true
	}
	if absolute {
		n.SetAttribute(relAttr, relAbsolute)
		n.SetAttribute(targetAttr, targetBlank)
	} else {
		n.SetAttribute(relAttr, relLocal)
	}
	return true
}

// urlScheme returns the lower-cased scheme of url as a browser would read
// it (ASCII tabs and newlines removed, leading spaces and controls
// trimmed), "" for a relative URL, whether the URL names a host (http://…,
// //host), and false when what precedes a colon cannot be a scheme but
// could be taken for one.
func urlScheme(url []byte) (scheme string, absolute, ok bool) {
	u := bytes.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, url)
	u = bytes.TrimLeft(u, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f ")
	end := bytes.IndexAny(u, ":/?#")
	if end < 0 || u[end] != ':' {
		return "", bytes.HasPrefix(u, []byte("//")), true
	}
	s := bytes.ToLower(u[:end])
	if len(s) == 0 {
		return "", false, false // ":x" is relative to a browser, but means nothing a link needs
	}
	for i, c := range s {
		alpha := c >= 'a' && c <= 'z'
		if !alpha && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return "", false, false
		}
	}
	return string(s), bytes.HasPrefix(u[end+1:], []byte("//")), true
}

// replaceByText puts n's text where n was: a link's or image's children
// (its label or alt text), or an autolink's URL as plain text.
func replaceByText(n ast.Node, src []byte) {
	parent := n.Parent()
	if parent == nil {
		return
	}
	if al, ok := n.(*ast.AutoLink); ok {
		parent.ReplaceChild(parent, n, ast.NewString(al.Label(src)))
		return
	}
	for c := n.FirstChild(); c != nil; {
		next := c.NextSibling()
		parent.InsertBefore(parent, n, c)
		c = next
	}
	parent.RemoveChild(parent, n)
}
