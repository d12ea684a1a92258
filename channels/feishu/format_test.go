package feishu

import "testing"

func TestFormat(t *testing.T) {
	cases := []struct{ name, in, post, card string }{
		{"plain", "hello **world**", "hello **world**", "hello **world**"},
		{"heading", "# Title\ntext", "**Title**\ntext", "# Title\ntext"},
		{"heading with bold", "## **Bold** title ##", "**Bold title**", "## **Bold** title ##"},
		{"image", "see ![chart](https://x/c.png \"t\")", "see [chart](https://x/c.png)", "see [chart](https://x/c.png)"},
		{"image without alt", "![](https://x/c.png)", "[image](https://x/c.png)", "[image](https://x/c.png)"},
		{"code untouched", "```md\n# not a heading\n| a | b |\n|---|---|\n```\n# after", "```md\n# not a heading\n| a | b |\n|---|---|\n```\n**after**", "```md\n# not a heading\n| a | b |\n|---|---|\n```\n# after"},
		{"table", "intro\n| a | b |\n|---|:-:|\n| 1 | 2 |\nafter", "intro\n```\n| a | b |\n|---|:-:|\n| 1 | 2 |\n```\nafter", "intro\n```\n| a | b |\n|---|:-:|\n| 1 | 2 |\n```\nafter"},
		{"pipe without table", "a | b | c", "a | b | c", "a | b | c"},
		{"crlf", "# T\r\nx", "**T**\nx", "# T\nx"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := toPost(tc.in); got != tc.post {
				t.Errorf("toPost(%q) = %q, want %q", tc.in, got, tc.post)
			}
			if got := toCard(tc.in); got != tc.card {
				t.Errorf("toCard(%q) = %q, want %q", tc.in, got, tc.card)
			}
		})
	}
}

func TestParseContent(t *testing.T) {
	cases := []struct {
		name, typ, content, text string
		refs                     int
		bad                      bool
	}{
		{"text", "text", `{"text":"hi @_user_1"}`, "hi @_user_1", 0, false},
		{"empty text", "text", `{"text":""}`, "", 0, true},
		{"text wrong type", "text", `{"text":7}`, "", 0, true},
		{"not json", "text", `hello`, "", 0, true},
		{"post with locale", "post", `{"zh_cn":{"title":"T","content":[[{"tag":"text","text":"a"},{"tag":"at","user_id":"@_user_1"}]]}}`, "T\na@_user_1", 0, false},
		{"post code", "post", `{"content":[[{"tag":"code_block","language":"GO","text":"x := 1\n"}]]}`, "```go\nx := 1\n```", 0, false},
		{"post bad", "post", `{"content":"x"}`, "", 0, true},
		{"image", "image", `{"image_key":"img_1"}`, "", 1, false},
		{"image without key", "image", `{}`, "", 0, true},
		{"audio", "audio", `{"file_key":"f","duration":3}`, "", 1, false},
		{"sticker", "sticker", `{"file_key":"s"}`, "[sticker]", 0, false},
		{"unknown", "share_chat", `{"chat_id":"oc"}`, "[share_chat message]", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			text, refs, err := parseContent(tc.typ, tc.content)
			if (err != nil) != tc.bad {
				t.Fatalf("err = %v, want error %v", err, tc.bad)
			}
			if tc.bad {
				return
			}
			if text != tc.text || len(refs) != tc.refs {
				t.Errorf("got %q with %d refs, want %q with %d", text, len(refs), tc.text, tc.refs)
			}
		})
	}
}
