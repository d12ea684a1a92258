package tools

import "testing"

func TestClipAndOneLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"short", "short"}, {"exactly10!", "exactly10!"}, {"eleven char", "eleven ch…"}, {"日本語のテキストです長い", "日本語のテキストで…"},
	} {
		if got := Clip(c.in, 10); got != c.want {
			t.Errorf("Clip(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := OneLine("a\n  b\tc ", 10); got != "a b c" {
		t.Errorf("OneLine = %q", got)
	}
}
