package openai_test

import (
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/openai"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// BenchmarkStream is one streamed answer of 40 chunks with a tool call,
// against the local fake: the client's share of a turn.
func BenchmarkStream(b *testing.B) {
	srv := providertest.New(b)
	reply := providertest.Reply{Text: strings.Repeat("streamed words ", 40), Chunks: 40,
		ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"a.txt"}`}}}
	srv.Handle(func(providertest.Request) providertest.Reply { return reply })
	srv.SetRecording(false)
	p := newProviderB(b, srv)
	req := userReq("x")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Stream(b.Context(), req, func(providers.Delta) {}); err != nil {
			b.Fatal(err)
		}
	}
}

func newProviderB(b *testing.B, srv *providertest.Server) *openai.Provider {
	b.Helper()
	p, err := openai.New(openai.Options{Endpoint: providers.Endpoint{Name: "testai", APIKey: testKey, APIBase: srv.OpenAIBase(), HTTPClient: srv.Client()}})
	if err != nil {
		b.Fatal(err)
	}
	return p
}
