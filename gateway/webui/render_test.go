package webui

import (
	"encoding/json"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// renderCases are the usual ways to smuggle markup or script through
// Markdown, with what must (still) come out.
var renderCases = []struct {
	name, src string
	want      []string // substrings of the HTML
}{
	{"script block", "<script>alert(1)</script>", nil},
	{"html block with handler", "<div onclick=\"alert(1)\">hi</div>", nil},
	{"inline img onerror", "a <img src=x onerror=alert(1)> b", []string{"a ", " b"}},
	{"inline link tag", `see <a href="javascript:alert(1)">x</a>`, []string{"see "}},
	{"svg onload", "<svg onload=alert(1)>", nil},
	{"iframe", "<iframe src=\"https://evil.example\"></iframe>", nil},
	{"comment and cdata", "<!-- x --><![CDATA[<script>]]> <?php x ?>", nil},
	{"style block", "<style>body{display:none}</style>", nil},
	{"reference link", "[x]\n\n[x]: javascript:alert(1)", []string{"x"}},
	{"svg data image", "![alt](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)", []string{"alt"}},
	{"png data image", "![alt](data:image/png;base64,iVBORw0KGgo=)", []string{`<img src="data:image/png;base64,iVBORw0KGgo=" alt="alt">`}},
	{"javascript autolink", "<javascript:alert(1)>", nil},
	{"other scheme autolink", "<foo:bar>", []string{"foo:bar"}},
	{"quote in url", `[x](https://e.example/" onclick="alert(1))`, []string{`href="https://e.example/%22`}},
	{"quote in title", `[x](https://e.example "t"" onclick="alert(1)")`, nil},
	{"quote in image alt", `![a" onerror="alert(1)](https://e.example/i.png)`, []string{`alt="a&quot; onerror=&quot;alert(1)"`}},
	{"fence info", "```\"><script>alert(1)</script>\nx\n```", []string{`<pre class="hl"><code>x`}},
	{"code span", "`<script>alert(1)</script>`", []string{"<code>&lt;script&gt;"}},
	{"https link", "[docs](https://example.com/a?b=1)", []string{`<a href="https://example.com/a?b=1" rel="nofollow noreferrer noopener" target="_blank">docs</a>`}},
	{"relative link", "[up](../x)", []string{`<a href="../x" rel="nofollow noreferrer">up</a>`}},
	{"mailto link", "[me](mailto:a@example.com)", []string{`href="mailto:a@example.com"`}},
	{"bare url", "see https://example.com/x and www.example.org", []string{`<a href="https://example.com/x" rel="nofollow noreferrer noopener" target="_blank">`, `<a href="http://www.example.org" rel="nofollow noreferrer noopener" target="_blank">`}},
	{"angle autolink", "<https://example.com>", []string{`<a href="https://example.com" rel="nofollow noreferrer noopener" target="_blank">https://example.com</a>`}},
	{"email autolink", "<a@example.com>", []string{`<a href="mailto:a@example.com">a@example.com</a>`}},
	{"aligned table", "| a | b |\n|:-:|--:|\n| 1 | 2 |", []string{`<th align="center">a</th>`, `<td align="right">2</td>`}},
	{"markdown", "**b** _i_ ~~s~~\n\n| a |\n|---|\n| 1 |\n\n- [x] done", []string{"<strong>b</strong>", "<em>i</em>", "<del>s</del>", "<td>1</td>", `disabled=""`}},
}

// badTargets are link and image targets a browser would run or hand
// elsewhere, spelt the ways that slip past a naive prefix check.
var badTargets = []string{
	"javascript:alert(1)", "JaVaScRiPt:alert(1)", "&#106;avascript:alert(1)", "java&#x09;script:alert(1)",
	"java&#10;script:alert(1)", "< javascript:alert(1)>", "vbscript:msgbox(1)", "file:///etc/passwd",
	"data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
}

// A link or image to a bad target shows as its text, nothing else.
func TestBadTargetsUnlinked(t *testing.T) {
	r, err := newMarkdown()
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range badTargets {
		for _, src := range []string{"[x](" + target + ")", "![x](" + target + ")"} {
			if got := r.HTML(src); got != "<p>x</p>\n" {
				t.Errorf("HTML(%q) = %q, want just the text", src, got)
			}
		}
	}
}

// TestMarkdownSafe renders each case and checks what came out with a real
// HTML parser: only the elements and attributes Markdown produces, no
// event handlers, and every URL relative or http, https, mailto (a data:
// URL only as a raster image).
func TestMarkdownSafe(t *testing.T) {
	r, err := newMarkdown()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range renderCases {
		t.Run(c.name, func(t *testing.T) {
			got := r.HTML(c.src)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("HTML(%q) = %q\nwant it to contain %q", c.src, got, w)
				}
			}
			if problem := unsafeMarkup(got); problem != "" {
				t.Errorf("HTML(%q) = %q\n%s", c.src, got, problem)
			}
		})
	}
}

// allowedElements are what goldmark with GFM and the highlighter emit.
var allowedElements = map[string]bool{
	"p": true, "br": true, "hr": true, "h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true,
	"em": true, "strong": true, "del": true, "code": true, "pre": true, "span": true, "blockquote": true,
	"ul": true, "ol": true, "li": true, "a": true, "img": true, "input": true,
	"table": true, "thead": true, "tbody": true, "tr": true, "th": true, "td": true,
}

// unsafeMarkup returns what in s could run script or load what it should
// not, or "".
func unsafeMarkup(s string) string {
	z := html.NewTokenizer(strings.NewReader(s))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			if !allowedElements[tok.Data] {
				return "element <" + tok.Data + ">"
			}
			if tok.Data == "input" && !hasAttr(tok, "disabled") {
				return "an enabled <input>"
			}
			for _, a := range tok.Attr {
				if strings.HasPrefix(strings.ToLower(a.Key), "on") || a.Key == "style" || a.Key == "srcdoc" {
					return "attribute " + a.Key + " on <" + tok.Data + ">"
				}
				if (a.Key == "href" || a.Key == "src") && !safeURL(a.Val, tok.Data == "img") {
					return a.Key + "=" + a.Val + " on <" + tok.Data + ">"
				}
			}
		}
	}
}

func hasAttr(tok html.Token, key string) bool {
	for _, a := range tok.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

// safeURL is the test's own, independent reading of a URL the way a
// browser does: tabs and newlines removed, leading spaces and controls
// trimmed, then the scheme before the first colon.
func safeURL(v string, image bool) bool {
	v = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(v)
	v = strings.ToLower(strings.TrimLeft(v, " \x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"))
	colon := strings.IndexByte(v, ':')
	if colon < 0 || strings.ContainsAny(v[:colon], "/?#") {
		return true
	}
	switch scheme := v[:colon]; {
	case scheme == "http" || scheme == "https" || scheme == "mailto":
		return true
	case image && scheme == "data":
		return strings.HasPrefix(v, "data:image/png;") || strings.HasPrefix(v, "data:image/jpeg;") ||
			strings.HasPrefix(v, "data:image/gif;") || strings.HasPrefix(v, "data:image/webp;")
	}
	return false
}

// Whatever the input, the HTML stays within the same bounds.
func FuzzMarkdownSafe(f *testing.F) {
	for _, c := range renderCases {
		f.Add(c.src)
	}
	for _, target := range badTargets {
		f.Add("[x](" + target + ")")
	}
	r, err := newMarkdown()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if problem := unsafeMarkup(r.HTML(src)); problem != "" {
			t.Errorf("HTML(%q): %s", src, problem)
		}
	})
}

// TestRenderEndpoint: POST /api/render renders as a stored message is
// rendered (fenced code highlighted, raw HTML dropped), for the signed-in
// page only, with the CSRF token.
func TestRenderEndpoint(t *testing.T) {
	b := newBench(t, true, false)
	text, _ := json.Marshal(map[string]string{"text": "⚠️ Approval needed (exec)\n\n```\nrm -rf build\n```\n\nTypes `/deny X`. <script>alert(1)</script>"})
	if code, _, _ := b.do("POST", "/api/render", string(text), nil); code != 403 {
		t.Errorf("without the CSRF token: %d, want 403", code)
	}
	code, body, _ := b.do("POST", "/api/render", string(text), map[string]string{"X-CSRF-Token": b.csrf()})
	html, _ := body["html"].(string)
	if code != 200 || !strings.Contains(html, `<pre class="hl"><code>rm -rf build`) || !strings.Contains(html, "<code>/deny X</code>") || strings.Contains(html, "<script") {
		t.Errorf("POST /api/render: %d %q", code, html)
	}
	big, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", maxRenderBytes+1)})
	if code, body, _ := b.do("POST", "/api/render", string(big), map[string]string{"X-CSRF-Token": b.csrf()}); code != 400 || body["path"] != "text" {
		t.Errorf("over the limit: %d %v, want 400 on text", code, body)
	}
}
