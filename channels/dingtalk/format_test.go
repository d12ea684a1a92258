package dingtalk

import "testing"

func TestToDingTalk(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"**bold** and _it_", "**bold** and _it_"},
		{"~~gone~~ kept", "gone kept"},
		{"`~~code~~`", "`~~code~~`"},
		{"| a | b |\n|---|---|\n| 1 | 2 |\nafter", "```\n| a | b |\n|---|---|\n| 1 | 2 |\n```\nafter"},
		{"| a | b |", "```\n| a | b |\n```"},
		{"```\n~~x~~ | y |\n```", "```\n~~x~~ | y |\n```"},
		{"# Title\ntext", "# Title\ntext"},
	} {
		if got := toDingTalk(tt.in); got != tt.want {
			t.Errorf("toDingTalk(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTitle(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"## Hello world\nbody", "Hello world"},
		{"\n\n**bold first**", "bold first"},
		{"", "nanobot"},
		{"这是一个很长很长很长很长很长很长很长的标题文字", "这是一个很长很长很长很长很长很长很长的标…"},
	} {
		if got := title(tt.in); got != tt.want {
			t.Errorf("title(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
