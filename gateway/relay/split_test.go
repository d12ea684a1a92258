package relay

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplitShort(t *testing.T) {
	if got := Split("hello", 10); len(got) != 1 || got[0] != "hello" {
		t.Errorf("Split = %q", got)
	}
}

func TestSplitParagraphs(t *testing.T) {
	text := strings.Repeat("a", 30) + "\n\n" + strings.Repeat("b", 30) + "\n\n" + strings.Repeat("c", 30)
	got := Split(text, 70)
	if len(got) != 2 || got[0] != strings.Repeat("a", 30)+"\n\n"+strings.Repeat("b", 30) || got[1] != strings.Repeat("c", 30) {
		t.Errorf("Split = %q", got)
	}
}

func TestSplitKeepsCodeBlocksIntact(t *testing.T) {
	var b strings.Builder
	b.WriteString("Here is the code:\n\n```go\n")
	for i := range 60 {
		b.WriteString("fmt.Println(\"line ")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString("\")\n")
	}
	b.WriteString("```\n\nDone.")
	text := b.String()
	const limit = 300
	chunks := Split(text, limit)
	if len(chunks) < 3 {
		t.Fatalf("want several chunks, got %d", len(chunks))
	}
	var rebuilt []string
	for i, c := range chunks {
		if n := utf8.RuneCountInString(c); n > limit {
			t.Errorf("chunk %d has %d characters, over %d", i, n, limit)
		}
		if strings.Count(c, "```")%2 != 0 {
			t.Errorf("chunk %d has an unbalanced fence:\n%s", i, c)
		}
		if i > 0 && strings.HasPrefix(strings.TrimSpace(c), "fmt") {
			t.Errorf("chunk %d continues code without reopening the fence", i)
		}
		for _, line := range strings.Split(c, "\n") {
			if strings.HasPrefix(line, "fmt.Println") {
				rebuilt = append(rebuilt, line)
			}
		}
	}
	if len(rebuilt) != 60 {
		t.Errorf("code lines after split: %d, want 60", len(rebuilt))
	}
	if !strings.HasPrefix(chunks[1], "```go\n") {
		t.Errorf("second chunk does not reopen with the language: %q", chunks[1][:min(20, len(chunks[1]))])
	}
}

func TestSplitLongWordAndUnicode(t *testing.T) {
	text := strings.Repeat("日本語", 50) // 150 runes, no spaces
	chunks := Split(text, 40)
	if strings.Join(chunks, "") != text {
		t.Error("hard split lost text")
	}
	for _, c := range chunks {
		if !utf8.ValidString(c) || utf8.RuneCountInString(c) > 40 {
			t.Errorf("bad chunk %q", c)
		}
	}
}

func FuzzSplit(f *testing.F) {
	f.Add("```py\nprint(1)\n```\n\ntext text", 20)
	f.Add(strings.Repeat("word ", 100), 33)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		if limit < 1 || limit > 10000 || !utf8.ValidString(text) {
			return
		}
		for _, c := range Split(text, limit) {
			if limit >= 32 && utf8.RuneCountInString(c) > limit {
				t.Fatalf("chunk of %d runes over limit %d", utf8.RuneCountInString(c), limit)
			}
		}
	})
}
