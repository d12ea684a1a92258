package discord

import "testing"

func TestToDiscord(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "hello", "hello"},
		{"bold and code pass", "**bold** _it_ `x`", "**bold** _it_ `x`"},
		{"shallow headings pass", "# One\n## Two\n### Three", "# One\n## Two\n### Three"},
		{"h4 to bold", "#### Four", "**Four**"},
		{"h6 with closing hashes", "###### Six ##", "**Six**"},
		{"seven hashes stay", "####### x", "####### x"},
		{"no space is not a heading", "####x", "####x"},
		{"heading in code stays", "```\n#### not a heading\n```", "```\n#### not a heading\n```"},
		{"table fenced", "before\n| a | b |\n|---|---|\n| 1 | 2 |\nafter", "before\n```\n| a | b |\n|---|---|\n| 1 | 2 |\n```\nafter"},
		{"table at end", "| a | b |\n| 1 | 2 |", "```\n| a | b |\n| 1 | 2 |\n```"},
		{"pipe in code stays", "```\n| a | b |\n```", "```\n| a | b |\n```"},
		{"single pipe is text", "| just this", "| just this"},
		{"fence language kept", "```go\nfmt.Println()\n```", "```go\nfmt.Println()\n```"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := toDiscord(tt.in); got != tt.want {
				t.Errorf("toDiscord(%q) =\n%q\nwant\n%q", tt.in, got, tt.want)
			}
		})
	}
}
