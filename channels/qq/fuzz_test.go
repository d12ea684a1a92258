package qq

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
)

// FuzzEvent feeds arbitrary event payloads to the worker's handler: it must
// never panic, and whatever it delivers has an id, a sender and a chat.
func FuzzEvent(f *testing.F) {
	for _, seed := range []string{
		`{"id":"m1","content":"hi","author":{"user_openid":"U1"}}`,
		`{"id":"m2","content":" <@!1> hi","group_openid":"G","author":{"member_openid":"M"},"attachments":[{"url":"x.test/a","size":"12"}]}`,
		`{"id":"m3","content":"dm","guild_id":"7","author":{"id":"9","bot":true}}`,
		`{"id":42,"author":"mallory","content":7}`,
		`{"attachments":[{"size":{}}]}`,
		`null`, `[]`, `"x"`, ``,
	} {
		for _, kind := range []string{evC2C, evGroupAt, evDirect, evGroupAll} {
			f.Add(kind, seed)
		}
	}
	ch, err := New(Config{AppID: "1", Secret: "secret", GroupConfig: channels.GroupConfig{GroupPolicy: channels.GroupOpen}}, channels.Deps{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, kind, data string) {
		var got []bus.Inbound
		in := channels.InboxFunc(func(_ context.Context, m bus.Inbound) error {
			got = append(got, m)
			return nil
		})
		ch.handle(context.Background(), in, event{kind: kind, data: []byte(data)})
		for _, m := range got {
			if m.MessageID == "" || m.SenderID == "" || m.ChatID == "" {
				t.Fatalf("delivered %+v", m)
			}
		}
	})
}

// FuzzToPlain: flattening never panics and leaves code blocks as written.
func FuzzToPlain(f *testing.F) {
	for _, seed := range []string{"**b** `c` [l](u)", "```go\n**x**\n```", "| a |\n|---|", "# h\n- x", "*", "``", "[](", "\x01\x01"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, md string) {
		if !utf8.ValidString(md) {
			return
		}
		out := toPlain(md)
		var inCode []string
		fence := false
		for line := range strings.SplitSeq(md, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fence = !fence
				continue
			}
			if fence {
				inCode = append(inCode, line)
			}
		}
		for _, line := range inCode {
			if !strings.Contains(out, line) {
				t.Fatalf("code line %q lost: %q -> %q", line, md, out)
			}
		}
		_ = toMarkdown(md)
	})
}
