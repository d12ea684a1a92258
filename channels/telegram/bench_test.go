package telegram

import (
	"strings"
	"testing"
)

// BenchmarkToHTML converts a typical agent reply (headings, lists, inline
// code, a fenced block, a link, a table) to Telegram HTML.
//
//	go test -run '^$' -bench ToHTML ./channels/telegram/
func BenchmarkToHTML(b *testing.B) {
	md := strings.Repeat("## Result\n\nHere is **what I found** about `nanobot` and _why_ it matters:\n\n"+
		"- first point with a [link](https://example.com/a?b=c)\n- second point < 3 & > 1\n\n"+
		"```go\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n", 4)
	b.SetBytes(int64(len(md)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if toHTML(md) == "" {
			b.Fatal("empty")
		}
	}
}
