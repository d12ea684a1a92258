package main

import "testing"

func TestModuleOf(t *testing.T) {
	mods := []string{"github.com/openai/openai-go/v3", "github.com/nanobot-go/nanobot", "golang.org/x/text", "go.mau.fi/whatsmeow"}
	tests := []struct{ sym, want string }{
		{"github.com/openai/openai-go/v3/responses.(*ResponseService).New", "github.com/openai/openai-go/v3"},
		{"type:*github.com/nanobot-go/nanobot/agent.Loop", "github.com/nanobot-go/nanobot"},
		{"go:itab.*go.mau.fi/whatsmeow/proto/waE2E.Message,google.golang.org/protobuf/reflect/protoreflect.ProtoMessage", "go.mau.fi/whatsmeow"},
		{"github.com/nanobot-go/nanobot/tools.Cast[go.shape.string]", "github.com/nanobot-go/nanobot"},
		{"slices.SortFunc[[]github.com/openai/openai-go/v3.Model]", "std"},
		{"golang.org/x/text/encoding/traditionalchinese.decode", "golang.org/x/text"},
		{"vendor/golang.org/x/net/http2/hpack.staticTable", "std"},
		{"runtime.mheap_", "std"},
		{"go:string.*", ""},
		{"go:func.*", ""},
		{"example.com/unknown.F", ""},
	}
	for _, tt := range tests {
		if got := moduleOf(tt.sym, mods); got != tt.want {
			t.Errorf("moduleOf(%q) = %q, want %q", tt.sym, got, tt.want)
		}
	}
}
