package shell

import (
	"strings"
	"testing"
)

func TestTerminalText(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		want   string
	}{
		{"plain", []string{"hello\r\n"}, "hello\n"},
		{"colours", []string{"\x1b[1;31mred\x1b[0m and \x1b[32mgreen\x1b[m\r\n"}, "red and green\n"},
		{"cursor and erase", []string{"a\x1b[2K\x1b[1Gb\x1b[?25l\x1b[?25h\r\n"}, "ab\n"},
		{"title (OSC with BEL)", []string{"\x1b]0;my title\x07prompt$ "}, "prompt$ "},
		{"hyperlink (OSC with ST)", []string{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\n"}, "link\n"},
		{"charset and keypad", []string{"\x1b(B\x1b=x\x1b>\n"}, "x\n"},
		{"progress bar", []string{"10%\r50%\r100%\r\n"}, "10%\n50%\n100%\n"},
		{"control characters", []string{"a\x07b\x08c\x00d\te\x7f\n"}, "abcd\te\n"},
		{"sequence split across reads", []string{"x\x1b", "[3", "1my\x1b]0;t", "itle\x1b", "\\z\n"}, "xyz\n"},
		{"CR LF split across reads", []string{"line\r", "\nnext\r", "over\n"}, "line\nnext\nover\n"},
		{"UTF-8 split across reads", []string{"caf\xc3", "\xa9 \xe2\x82", "\xac\n"}, "café €\n"},
		{"invalid UTF-8", []string{"a\xffb\n"}, "a\uFFFDb\n"},
		{"trailing CR flushed", []string{"end\r"}, "end\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tt2 terminalText
			var sb strings.Builder
			for _, c := range tt.chunks {
				sb.WriteString(tt2.write([]byte(c)))
			}
			sb.WriteString(tt2.flush())
			if got := sb.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestOutputBuffer(t *testing.T) {
	b := newOutputBuffer(10)
	if !b.empty() || b.drain() != "" {
		t.Fatal("new buffer not empty")
	}
	b.write("abc")
	b.write("de")
	if got := b.drain(); got != "abcde" {
		t.Errorf("small output: %q", got)
	}
	// 26 letters through a 10-character buffer: the first 5, the last 5.
	for _, c := range "abcdefghijklmnopqrstuvwxyz" {
		b.write(string(c))
	}
	want := "abcde" + gapNote(16) + "vwxyz"
	if got := b.drain(); got != want {
		t.Errorf("long output: %q, want %q", got, want)
	}
	// One big write, with multi-byte characters.
	b.write(strings.Repeat("é", 7) + strings.Repeat("ü", 8))
	want = "ééééé" + gapNote(5) + "üüüüü"
	if got := b.drain(); got != want {
		t.Errorf("big write: %q, want %q", got, want)
	}
	if !b.empty() {
		t.Error("drain left something")
	}
}

func TestClip(t *testing.T) {
	if got := clip("short", 10); got != "short" {
		t.Errorf("clip short: %q", got)
	}
	got := clip("0123456789abcdefghij", 10)
	if want := "01234" + gapNote(10) + "fghij"; got != want {
		t.Errorf("clip: %q, want %q", got, want)
	}
}
