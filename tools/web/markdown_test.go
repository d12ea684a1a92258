package web

import (
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

func TestMarkdown(t *testing.T) {
	base, _ := url.Parse("https://example.com/docs/page")
	tests := []struct {
		name, html, want string
	}{
		{"paragraphs and whitespace", "<p>one\n   two</p><p>three</p>", "one two\n\nthree"},
		{"headings", "<h1>Title</h1><h3>Sub <em>part</em></h3>", "# Title\n\n### Sub *part*"},
		{"relative link and image", `<p>See <a href="../api">the API</a> <img src="/i.png" alt="logo"></p>`, "See [the API](https://example.com/api) ![logo](https://example.com/i.png)"},
		{"javascript and fragment links dropped", `<p><a href="javascript:x()">run</a> <a href="#top">top</a></p>`, "run top"},
		{"emphasis spacing", "<p>a<strong> bold </strong>b</p>", "a **bold** b"},
		{"ordered and nested lists", "<ol><li>first</li><li>second<ul><li>inner</li></ul></li></ol>", "1. first\n2. second\n  - inner"},
		{"code", `<p>Use <code>go test</code>:</p><pre class="language-sh">go test ./...
go vet ./...</pre>`, "Use `go test`:\n\n```sh\ngo test ./...\ngo vet ./...\n```"},
		{"blockquote", "<blockquote><p>quoted</p><p>twice</p></blockquote>", "> quoted\n> \n> twice"},
		{"table", "<table><thead><tr><th>a</th><th>b|c</th></tr></thead><tbody><tr><td>1</td></tr></tbody></table>", "| a | b\\|c |\n| --- | --- |\n| 1 |  |"},
		{"scripts and forms skipped", "<div>text<script>bad()</script><form><input value=x></form><style>p{}</style></div>", "text"},
		{"line breaks", "<p>a<br>b</p>", "a\nb"},
		{"mixed inline and block", "<div>lead <b>in</b><p>para</p>tail</div>", "lead **in**\n\npara\n\ntail"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := html.Parse(strings.NewReader(tt.html))
			if err != nil {
				t.Fatal(err)
			}
			if got := markdown(doc, base); got != tt.want {
				t.Errorf("markdown() =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestMarkdownDeepNesting(t *testing.T) {
	deep := strings.Repeat("<div><span>", 250) + "x" + strings.Repeat("</span></div>", 250)
	doc, err := html.Parse(strings.NewReader(deep))
	if err != nil {
		t.Fatal(err)
	}
	_ = markdown(doc, nil) // must not overflow the stack
}
