package repl

import (
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"**bold** and *it*", ansiBold + "bold" + ansiReset + " and " + ansiItalic + "it" + ansiReset},
		{"use `a*b*c` here", "use " + ansiCode + "a*b*c" + ansiReset + " here"},
		{"# Title", ansiHeading + "Title" + ansiReset},
		{"- item", "• item"},
		{"see [docs](https://x.y)", "see docs (" + ansiLink + "https://x.y" + ansiReset + ")"},
		{"snake_case_name stays", "snake_case_name stays"},
		{"```go\nx := *p\n```", ansiDim + "┌ go" + ansiReset + "\n" + ansiCode + "  x := *p" + ansiReset + "\n" + ansiDim + "└" + ansiReset},
	}
	for _, tt := range tests {
		if got := Render(tt.in); got != tt.want {
			t.Errorf("Render(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

func TestStreamingMatchesWhole(t *testing.T) {
	text := "# Plan\n\nFirst **do** this:\n```sh\nls -la\n```\n- then `that`\nend"
	whole := Render(text)
	var r Renderer
	var got strings.Builder
	for _, ch := range strings.SplitAfter(text, "") { // one byte at a time
		got.WriteString(r.Write(ch))
	}
	got.WriteString(r.Flush())
	if got.String() != whole {
		t.Errorf("streamed render differs:\n got %q\nwant %q", got.String(), whole)
	}
}
