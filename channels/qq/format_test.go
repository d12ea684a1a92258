package qq

import (
	"testing"

	"github.com/nanobot-go/nanobot/bus"
)

func TestToPlain(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"text", "just text", "just text"},
		{"heading", "## Plan ##\nbody", "Plan\nbody"},
		{"not a heading", "#hashtag", "#hashtag"},
		{"bold italic strike", "**b** __u__ *i* ~~s~~", "b u i s"},
		{"star in arithmetic", "2 * 3 * 4", "2 * 3 * 4"},
		{"snake_case kept", "use my_var_name here", "use my_var_name here"},
		{"inline code kept literally", "run `go **test**` now", "run go **test** now"},
		{"link", "see [the docs](https://example.com/a)", "see the docs (https://example.com/a)"},
		{"bare link", "[https://x.test](https://x.test)", "https://x.test"},
		{"image", "![chart](https://x.test/c.png)", "https://x.test/c.png"},
		{"bullets", "- one\n  * two\n+ three", "• one\n  • two\n• three"},
		{"numbered list kept", "1. first\n2. second", "1. first\n2. second"},
		{"table", "| a | b |\n|---|:-:|\n| 1 | 2 |", "| a | b |\n| 1 | 2 |"},
		{"code block untouched", "```go\n**x** := `y`\n# not a heading\n```\n**after**", "```go\n**x** := `y`\n# not a heading\n```\nafter"},
		{"quote kept", "> quoted **bold**", "> quoted bold"},
		{"rule kept", "a\n---\nb", "a\n---\nb"},
		{"chinese", "**你好**，世界", "你好，世界"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := toPlain(tt.in); got != tt.want {
				t.Errorf("toPlain(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestToMarkdown(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"passes through", "# Title\n**b** [l](https://x.test)\n- item", "# Title\n**b** [l](https://x.test)\n- item"},
		{"table in a code block", "before\n| a | b |\n|---|---|\n| 1 | 2 |\nafter", "before\n```\n| a | b |\n|---|---|\n| 1 | 2 |\n```\nafter"},
		{"table at the end", "| a |\n|---|", "```\n| a |\n|---|\n```"},
		{"pipes in code untouched", "```\n| not | a table |\n```", "```\n| not | a table |\n```"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := toMarkdown(tt.in); got != tt.want {
				t.Errorf("toMarkdown(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestStripMentions(t *testing.T) {
	for in, want := range map[string]string{
		" hello":                  "hello",
		"<@!123> hi":              "hi",
		"<@123><@!456>  hi there": "hi there",
		"hi <@!123>":              "hi <@!123>",
		"":                        "",
	} {
		if got := stripMentions(in); got != want {
			t.Errorf("stripMentions(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAttachmentURL(t *testing.T) {
	for in, want := range map[string]string{
		"gchat.qpic.cn/qmeetpic/0/x/0":  "https://gchat.qpic.cn/qmeetpic/0/x/0",
		"//multimedia.nt.qq.com.cn/a":   "https://multimedia.nt.qq.com.cn/a",
		"https://x.test/a?b=1":          "https://x.test/a?b=1",
		"http://127.0.0.1:8080/files/a": "http://127.0.0.1:8080/files/a",
		"  ":                            "",
	} {
		if got := attachmentURL(in); got != want {
			t.Errorf("attachmentURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFileType(t *testing.T) {
	tests := []struct {
		md   bus.Media
		want int
	}{
		{bus.Media{MIMEType: "image/jpeg"}, fileImage},
		{bus.Media{Path: "/tmp/a.PNG"}, fileImage},
		{bus.Media{MIMEType: "video/mp4"}, fileVideo},
		{bus.Media{URL: "https://x.test/v.mp4"}, fileVideo},
		{bus.Media{Name: "voice.silk"}, fileVoice},
		{bus.Media{MIMEType: "application/pdf", Name: "a.pdf"}, fileOther},
	}
	for _, tt := range tests {
		if got := fileType(tt.md); got != tt.want {
			t.Errorf("fileType(%+v) = %d, want %d", tt.md, got, tt.want)
		}
	}
}
