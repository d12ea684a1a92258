package webui

import (
	"strings"
	"testing"
)

func TestHighlight(t *testing.T) {
	cases := []struct {
		lang, code string
		want       []string
	}{
		{"go", "func main() { // hi\n\tx := \"a\\\"b\" + `raw` + 0x1F }",
			[]string{`<span class="k">func</span> main()`, `<span class="c">// hi</span>`, `<span class="s">&#34;a\&#34;b&#34;</span>`, "<span class=\"s\">`raw`</span>", `<span class="n">0x1F</span>`}},
		{"Python", "def f(x):\n    '''doc\n    more'''\n    return x * 2.5  # half",
			[]string{`<span class="k">def</span> f`, "<span class=\"s\">&#39;&#39;&#39;doc\n    more&#39;&#39;&#39;</span>", `<span class="n">2.5</span>`, `<span class="c"># half</span>`}},
		{"sql", "SELECT name FROM t WHERE id = 'x' -- why", []string{`<span class="k">SELECT</span>`, `<span class="s">&#39;x&#39;</span>`, `<span class="c">-- why</span>`}},
		{"rust", "fn f<'a>(s: &'a str) {}", []string{`<span class="k">fn</span> f&lt;&#39;a&gt;`}},
		{"", "<script>alert(1)</script>", []string{"&lt;script&gt;alert(1)&lt;/script&gt;"}},
		{"js", "/* open", []string{`<span class="c">/* open</span>`}},
		{"json", `{"k": "unterminated`, []string{`<span class="s">&#34;k&#34;</span>`, `<span class="s">&#34;unterminated</span>`}},
	}
	for _, c := range cases {
		got := highlight(c.lang, c.code)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("highlight(%q, %q) = %q\nwant it to contain %q", c.lang, c.code, got, w)
			}
		}
		if strings.Contains(got, "<script") {
			t.Errorf("highlight(%q) let markup through: %q", c.lang, got)
		}
	}
}

// Every byte of the input comes out, escaped, in order: the scanner never
// drops or repeats text, whatever the input.
func FuzzHighlight(f *testing.F) {
	for _, s := range []string{"func x() {}", "'''", "\"\\", "/*", "`", "0x.5", "ü日本 // ä", "--"} {
		f.Add("go", s)
		f.Add("python", s)
		f.Add("sql", s)
	}
	f.Fuzz(func(t *testing.T, lang, code string) {
		got := highlight(lang, code)
		for _, tag := range []string{`<span class="c">`, `<span class="s">`, `<span class="n">`, `<span class="k">`, "</span>"} {
			got = strings.ReplaceAll(got, tag, "")
		}
		if want := htmlEscape(code); got != want {
			t.Fatalf("text changed:\n got %q\nwant %q", got, want)
		}
	})
}

func htmlEscape(s string) string { return highlight("", s) }

func TestMarkdownCodeBlock(t *testing.T) {
	m, err := newMarkdown()
	if err != nil {
		t.Fatal(err)
	}
	got := m.HTML("```go\nreturn \"<b>\"\n```\n")
	if !strings.Contains(got, `<pre class="hl"><code><span class="k">return</span> <span class="s">&#34;&lt;b&gt;&#34;</span>`) {
		t.Errorf("code block = %q", got)
	}
}
