package slack

import "testing"

func TestToMrkdwn(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "hello world", "hello world"},
		{"escaping", "a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"},
		{"bold", "**bold** and __also__", "*bold* and *also*"},
		{"italic star", "an *italic* word", "an _italic_ word"},
		{"italic underscore", "an _italic_ word", "an _italic_ word"},
		{"snake case stays", "call my_func_name now", "call my_func_name now"},
		{"lonely star", "2 * 3 = 6", "2 * 3 = 6"},
		{"strike", "~~gone~~", "~gone~"},
		{"inline code", "run `ls <dir>` now", "run `ls &lt;dir&gt;` now"},
		{"code keeps markdown", "`**x**`", "`**x**`"},
		{"code block", "```go\nif a < b && **c** {\n```", "```\nif a &lt; b &amp;&amp; **c** {\n```"},
		{"unclosed code block", "```\nx", "```\nx\n```"},
		{"link", "see [the docs](https://example.com/a?b=1&c=2)", "see <https://example.com/a?b=1&amp;c=2|the docs>"},
		{"link with bold", "[**big**](https://x.io)", "<https://x.io|*big*>"},
		{"javascript link is text", "[x](javascript:alert(1))", "[x](javascript:alert(1))"},
		{"heading", "# Title\n## Sub", "*Title*\n*Sub*"},
		{"bullets", "- one\n* two", "• one\n• two"},
		{"slack markup is text", "<!channel> <@U1>", "&lt;!channel&gt; &lt;@U1&gt;"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := toMrkdwn(tc.in); got != tc.want {
				t.Errorf("toMrkdwn(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestFromMrkdwn(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a &lt;b&gt; &amp; c", "a <b> & c"},
		{"see <https://x.io|the site>", "see [the site](https://x.io)"},
		{"bare <https://x.io>", "bare https://x.io"},
		{"hi <@U123>", "hi <@U123>"},
	}
	for _, tc := range tests {
		if got := fromMrkdwn(tc.in); got != tc.want {
			t.Errorf("fromMrkdwn(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
