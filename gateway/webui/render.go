package webui

import (
	"bytes"
	"fmt"
	"html"
	"regexp"

	"github.com/alecthomas/chroma/v2"
	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/alecthomas/chroma/v2/lexers"
	"github.com/alecthomas/chroma/v2/styles"
	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// markdown turns the Markdown of stored messages into safe HTML: goldmark
// parses (raw HTML in the source is dropped), chroma highlights fenced
// code by class, and bluemonday sanitises the result, so neither a model
// nor a chat partner can inject markup into the workbench. It is safe for
// concurrent use.
type markdown struct {
	md     goldmark.Markdown
	policy *bluemonday.Policy
	css    []byte // the highlight classes, light and dark
}

var (
	chromaClass = regexp.MustCompile(`^[a-zA-Z0-9 _-]{1,64}$`)
	// cssRule finds the selector of each rule chroma writes, after its
	// comment: "/* Keyword */ .chroma .k { ... }".
	cssRule = regexp.MustCompile(`(?m)^(\s*(?:/\*[^*]*\*/\s*)?)(\.)`)
)

func newMarkdown() (*markdown, error) {
	f := chromahtml.New(chromahtml.WithClasses(true))
	md := goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(&codeRenderer{f: f, style: styles.Get("github")}, 100))),
	)
	p := bluemonday.UGCPolicy()
	p.AllowAttrs("class").Matching(chromaClass).OnElements("span", "pre", "code", "div")
	p.RequireNoReferrerOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)

	// Light by default; dark when the page is dark: by the system's
	// setting unless the page forces light, or forced by the theme switch.
	var css bytes.Buffer
	for _, v := range []struct{ style, open, scope, close string }{
		{"github", "", "", ""},
		{"github-dark", "@media (prefers-color-scheme: dark) {\n", ":root:not([data-theme=light]) ", "}\n"},
		{"github-dark", "", ":root[data-theme=dark] ", ""},
	} {
		var b bytes.Buffer
		if err := f.WriteCSS(&b, styles.Get(v.style)); err != nil {
			return nil, fmt.Errorf("webui: highlight css: %w", err)
		}
		css.WriteString(v.open)
		if v.scope != "" {
			// Tokens the dark style leaves to the block's colour would
			// keep the light style's: reset them first.
			css.WriteString(v.scope + ".chroma span { color: inherit; background-color: transparent }\n")
		}
		css.Write(cssRule.ReplaceAll(b.Bytes(), []byte("${1}"+v.scope+"${2}")))
		css.WriteString(v.close)
	}
	return &markdown{md: md, policy: p, css: css.Bytes()}, nil
}

// HTML renders Markdown to sanitised HTML.
func (r *markdown) HTML(src string) string {
	var buf bytes.Buffer
	if err := r.md.Convert([]byte(src), &buf); err != nil {
		return "<pre>" + html.EscapeString(src) + "</pre>"
	}
	return r.policy.Sanitize(buf.String())
}

// codeRenderer renders fenced code blocks through chroma.
type codeRenderer struct {
	f     *chromahtml.Formatter
	style *chroma.Style
}

func (c *codeRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindFencedCodeBlock, c.render)
}

func (c *codeRenderer) render(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	fb := n.(*ast.FencedCodeBlock)
	var code bytes.Buffer
	for i := range fb.Lines().Len() {
		seg := fb.Lines().At(i)
		code.Write(seg.Value(src))
	}
	lexer := lexers.Get(string(fb.Language(src)))
	if lexer == nil {
		lexer = lexers.Analyse(code.String())
	}
	if lexer == nil {
		lexer = lexers.Fallback
	}
	it, err := chroma.Coalesce(lexer).Tokenise(nil, code.String())
	if err == nil {
		err = c.f.Format(w, c.style, it)
	}
	if err != nil {
		_, _ = w.WriteString("<pre><code>" + html.EscapeString(code.String()) + "</code></pre>")
	}
	return ast.WalkSkipChildren, nil
}
