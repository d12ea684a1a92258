package telegram

import (
	"testing"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
)

func TestToHTML(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "hello world", "hello world"},
		{"escaping", "a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"},
		{"html is text", "<b>not bold</b>", "&lt;b&gt;not bold&lt;/b&gt;"},
		{"bold", "**bold** and __also__", "<b>bold</b> and <b>also</b>"},
		{"italic", "*it* and _it_", "<i>it</i> and <i>it</i>"},
		{"snake case stays", "call my_func_name now", "call my_func_name now"},
		{"strike", "~~gone~~", "<s>gone</s>"},
		{"nested", "**bold *and italic***", "<b>bold <i>and italic</i></b>"},
		{"inline code", "run `ls -l <dir>` now", "run <code>ls -l &lt;dir&gt;</code> now"},
		{"code keeps markdown", "`**x**`", "<code>**x**</code>"},
		{"double backtick code", "``a`b``", "<code>a`b</code>"},
		{"lonely star", "2 * 3 = 6", "2 * 3 = 6"},
		{"unclosed bold", "**open", "**open"},
		{"link", "see [the docs](https://example.com/a?b=1&c=2)", `see <a href="https://example.com/a?b=1&amp;c=2">the docs</a>`},
		{"link with bold text", "[**big**](https://x.io)", `<a href="https://x.io"><b>big</b></a>`},
		{"javascript link is text", "[x](javascript:alert(1))", "[x](javascript:alert(1))"},
		{"link quote escaped", `[x](https://x.io/"onclick)`, `<a href="https://x.io/&#34;onclick">x</a>`},
		{"heading", "# Title\n## Sub *x*", "<b>Title</b>\n<b>Sub <i>x</i></b>"},
		{"bullets", "- one\n* two\n  + nested", "• one\n• two\n  • nested"},
		{"ordered", "1. first\n2) second", "1. first\n2) second"},
		{"rule", "above\n---\nbelow", "above\n――――――――\nbelow"},
		{"quote", "> wise\n> words", "<blockquote>wise\nwords</blockquote>"},
		{"code block with language", "```go\nfmt.Println(\"<hi>\")\n```", `<pre><code class="language-go">fmt.Println("&lt;hi&gt;")</code></pre>`},
		{"code block without language", "```\nx := 1\n```", "<pre>x := 1</pre>"},
		{"unclosed code block", "```py\nprint(1)", `<pre><code class="language-py">print(1)</code></pre>`},
		{"markdown inside code block", "```\n**no** _no_\n```", "<pre>**no** _no_</pre>"},
		{"tilde fence", "~~~\ncode\n~~~", "<pre>code</pre>"},
		{"hostile language", "```\"><script>\nx\n```", "<pre>x</pre>"},
		{"backslash escape", `\*not italic\*`, "*not italic*"},
		{"table", "| a | bb |\n|---|---|\n| ccc | d |", "<pre>a   | bb\nccc | d</pre>"},
		{"invalid utf8", "a\xffb", "a\uFFFDb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := toHTML(tt.in)
			if got != tt.want {
				t.Errorf("toHTML(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			if _, _, err := telegramtest.ParseHTML(got); err != nil {
				t.Errorf("Telegram would refuse %q: %v", got, err)
			}
		})
	}
}

// FuzzToHTML checks that whatever the Markdown, the HTML is something
// Telegram accepts: only its tags, balanced, every other <, > and & escaped.
func FuzzToHTML(f *testing.F) {
	for _, s := range []string{
		"**a *b* c**", "[x](https://y) `z`", "```go\ncode\n```", "> q\n- l\n# h", "a<b>&c",
		"***", "**_~~`", "[[a](https://b)](https://c)", "| a |\n|---|\n| b |", "_a_b_", "``` \n", "\\`x`",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		out := toHTML(md)
		if _, _, err := telegramtest.ParseHTML(out); err != nil {
			t.Fatalf("toHTML(%q) = %q: Telegram would refuse it: %v", md, out, err)
		}
		if !utf8.ValidString(out) {
			t.Fatalf("toHTML(%q) = %q: not UTF-8", md, out)
		}
	})
}
