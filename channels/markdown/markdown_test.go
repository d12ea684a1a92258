package markdown

import (
	"strings"
	"testing"
	"time"
)

// tagged marks every construct with its hook's name, so a test sees which
// hook ran on what.
var tagged = Rules{
	Heading:   func(level int, text, _ string) string { return "H" + strings.Repeat("#", level) + "[" + text + "]" },
	Table:     func(rows []string) string { return "T[" + strings.Join(rows, "/") + "]" },
	CodeBlock: func(lang, code, _ string) string { return "C<" + lang + ">[" + code + "]" },
	Bullet:    func(m string) string { return "B" + m },
	Quote:     func(string) string { return "Q" },
	Bold:      func(s string) string { return "b[" + s + "]" },
	Italic:    func(s string) string { return "i[" + s + "]" },
	Strike:    func(s string) string { return "s[" + s + "]" },
	Code:      func(s string) string { return "c[" + s + "]" },
	Link:      func(t, u string) string { return "l[" + t + "|" + u + "]" },
	Image:     func(a, u string) string { return "img[" + a + "|" + u + "]" },
}

func TestRender(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain text untouched", "just text", "just text"},
		{"bold italic strike", "**b** *i* _j_ ~~s~~", "b[b] i[i] i[j] s[s]"},
		{"nested", "**bold *and it***", "b[bold i[and it]]"},
		{"underscores inside words", "my_var_name", "my_var_name"},
		{"lone stars", "2 * 3 * 4", "2 * 3 * 4"},
		{"inline code is not parsed", "run `go **x**` now", "run c[go **x**] now"},
		{"double backticks", "``a ` b``", "c[a ` b]"},
		{"link with bold text", "see [**the** docs](https://x.test/a_(b))", "see l[b[the] docs|https://x.test/a_(b)]"},
		{"image", "![chart](https://x.test/c.png)", "img[chart|https://x.test/c.png]"},
		{"atx heading", "## Plan ##\nbody", "H##[Plan]\nbody"},
		{"heading with markup", "# a **b**", "H#[a b[b]]"},
		{"setext is a paragraph and a rule", "a\n---\nb", "a\n---\nb"},
		{"bullets keep indent", "- one\n  * two\n+ three", "B- one\n  B* two\nB+ three"},
		{"ordered list untouched", "1. **one**\n2. two", "1. b[one]\n2. two"},
		{"quote", "> quoted **x**\n> more", "Q quoted b[x]\nQ more"},
		{"fenced code", "```go\nx := 1\n```\nafter", "C<go>[x := 1\n]\nafter"},
		{"fenced code in a list", "- a\n\n  ```\n  code\n  ```", "B- a\n\n  C<>[code\n]"},
		{"table with separator", "| a | b |\n|---|---|\n| 1 | 2 |", "T[| a | b |/|---|---|/| 1 | 2 |]"},
		{"table without separator, text around", "before\n| a | b |\n| 1 | 2 |\nafter **x**", "before\nT[| a | b |/| 1 | 2 |]\nafter b[x]"},
		{"one pipe is text", "| just this", "| just this"},
		{"blank lines kept", "a\n\n\nb", "a\n\n\nb"},
		{"html kept", "<b>x</b> **y**", "<b>x</b> b[y]"},
		{"chinese punctuation", "**你好**，世界", "b[你好]，世界"},
		{"unclosed markup kept", "**open [link](", "**open [link]("},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Render(tt.in, tagged); got != tt.want {
				t.Errorf("Render(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestRenderNoHooks: with no hooks, the output is the input, byte for byte.
func TestRenderNoHooks(t *testing.T) {
	for _, in := range []string{
		"# T\n\n**b** _i_ `c` [l](u \"t\") ![a](i)\n\n- x\n  - y\n\n> q\n\n```go\nz\n```\n| a |\n|---|\n",
		"a  \nb\\\nc &amp; \\*d\\*",
		"   indented\n\n    code\n\n***\n",
	} {
		if got := Render(in, Rules{}); got != in {
			t.Errorf("Render(%q, no hooks) = %q", in, got)
		}
	}
}

// TestRenderText: the Text hook escapes plain text and only plain text.
func TestRenderText(t *testing.T) {
	r := Rules{
		Text: func(s string) string { return strings.ReplaceAll(s, "<", "&lt;") },
		Code: func(s string) string { return "<code>" + s + "</code>" },
		Bold: func(s string) string { return "<b>" + s + "</b>" },
	}
	got := Render("a<b **c<d** `e<f`", r)
	want := "a&lt;b <b>c&lt;d</b> <code>e<f</code>"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func FuzzRender(f *testing.F) {
	for _, s := range []string{"**a** _b_ `c`", "- x\n  * y", "| a |\n|-|", "```\nx\n```", "> **q**", "[a](b) ![c](d)", "# h #", "~~s~~"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		done := make(chan struct{})
		go func() { defer close(done); _ = Render(md, tagged); _ = Render(md, Rules{}) }()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			t.Fatalf("hang on %q", md)
		}
		if got := Render(md, Rules{}); got != md {
			t.Fatalf("no hooks changed %q to %q", md, got)
		}
		_ = Render(md, tagged)
	})
}

func TestPlainText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"## Plan\n**bold** *it* ~~gone~~", "Plan\nbold it gone"},
		{"[docs](https://x.test/d) and [https://x.test](https://x.test)", "docs (https://x.test/d) and https://x.test"},
		{"[a@b.test](mailto:a@b.test)", "mailto:a@b.test"},
		{"![chart](https://x.test/c.png)", "chart (https://x.test/c.png)"},
		{"  - item\n\n```go\nx := **1**\n```  ", "- item\n\n```go\nx := **1**\n```"},
	}
	for _, tt := range tests {
		if got := PlainText(tt.in); got != tt.want {
			t.Errorf("PlainText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
