package webui

import (
	"bytes"
	"html"
	"net/http"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// markdown turns the Markdown of stored messages into safe HTML, so neither
// a model nor a chat partner can inject markup into the workbench. The
// safety comes from what goldmark emits, not from a sanitiser run over it
// afterwards: without html.WithUnsafe goldmark replaces raw HTML (blocks and
// inline) with a comment and escapes all text and attribute values; the
// linkPolicy transformer unlinks every link, autolink and image whose URL
// has a scheme other than http, https or mailto (and data: images goldmark
// itself accepts), and marks the remaining links rel="nofollow noreferrer"
// (plus target="_blank" and "noopener" for absolute ones); fenced code goes
// through highlight, which escapes it. render_test.go pins each of these
// against the usual injection vectors. It is safe for concurrent use.
type markdown struct {
	md  goldmark.Markdown
	css []byte // the highlight classes, light and dark
}

func newMarkdown() (*markdown, error) {
	md := goldmark.New(
		// GFM, with table alignment as the align attribute rather than a
		// style one, so that the page allows no inline styles at all.
		goldmark.WithExtensions(extension.Linkify, extension.Strikethrough, extension.TaskList,
			extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute))),
		goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(linkPolicy{}, 100))),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(codeRenderer{}, 100))),
	)
	return &markdown{md: md, css: []byte(highlightCSS)}, nil
}

// HTML renders Markdown to safe HTML.
func (r *markdown) HTML(src string) string {
	var buf bytes.Buffer
	if err := r.md.Convert([]byte(src), &buf); err != nil {
		return "<pre>" + html.EscapeString(src) + "</pre>"
	}
	return buf.String()
}

// codeRenderer renders fenced code blocks through highlight.
type codeRenderer struct{}

func (c codeRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindFencedCodeBlock, c.render)
}

func (codeRenderer) render(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	fb := n.(*ast.FencedCodeBlock)
	var code bytes.Buffer
	for i := range fb.Lines().Len() {
		seg := fb.Lines().At(i)
		code.Write(seg.Value(src))
	}
	_, _ = w.WriteString(`<pre class="hl"><code>`)
	_, _ = w.WriteString(highlight(string(fb.Language(src)), code.String()))
	_, _ = w.WriteString("</code></pre>\n")
	return ast.WalkSkipChildren, nil
}

// maxRenderBytes bounds what POST /api/render takes: a chat message, not a
// document.
const maxRenderBytes = 64 << 10

// postRender is POST /api/render {"text"}: {"html"}, Markdown rendered as
// a stored message's is. The chat shows a live message the gateway does
// not store in the conversation (an approval request) with it.
func (s *Server) postRender(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Text string `json:"text"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	if len(body.Text) > maxRenderBytes {
		writeError(w, http.StatusBadRequest, "text", "over 64 KiB")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"html": s.render.HTML(body.Text)})
}
