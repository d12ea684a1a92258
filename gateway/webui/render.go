package webui

import (
	"bytes"
	"html"
	"regexp"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// markdown turns the Markdown of stored messages into safe HTML: goldmark
// parses (raw HTML in the source is dropped), highlight colours fenced
// code by class, and bluemonday sanitises the result, so neither a model
// nor a chat partner can inject markup into the workbench. It is safe for
// concurrent use.
type markdown struct {
	md     goldmark.Markdown
	policy *bluemonday.Policy
	css    []byte // the highlight classes, light and dark
}

var codeClass = regexp.MustCompile(`^(hl|c|s|n|k|language-[a-zA-Z0-9+#_-]{1,32})$`)

func newMarkdown() (*markdown, error) {
	md := goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(codeRenderer{}, 100))),
	)
	p := bluemonday.UGCPolicy()
	p.AllowAttrs("class").Matching(codeClass).OnElements("span", "pre", "code")
	p.RequireNoReferrerOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)
	return &markdown{md: md, policy: p, css: []byte(highlightCSS)}, nil
}

// HTML renders Markdown to sanitised HTML.
func (r *markdown) HTML(src string) string {
	var buf bytes.Buffer
	if err := r.md.Convert([]byte(src), &buf); err != nil {
		return "<pre>" + html.EscapeString(src) + "</pre>"
	}
	return r.policy.Sanitize(buf.String())
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
