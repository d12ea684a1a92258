package openai_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// The usage ledger prices cached and reasoning tokens apart: both are read
// from the wire, streaming (the usage chunk stream_options.include_usage
// asks for) and not; a server that reports nothing leaves Usage zero, so
// the ledger knows to estimate.
func TestUsageFromTheWire(t *testing.T) {
	wire := &providertest.Usage{PromptTokens: 1200, CompletionTokens: 300, CacheReadTokens: 1024, ReasoningTokens: 256}
	want := providers.Usage{PromptTokens: 1200, CompletionTokens: 300, TotalTokens: 1500, CacheReadTokens: 1024, ReasoningTokens: 256}
	for _, stream := range []bool{false, true} {
		for _, none := range []bool{false, true} {
			srv := providertest.New(t)
			srv.Push(providertest.Reply{Text: "ok", Usage: wire, NoUsage: none})
			p := newProvider(t, srv)
			var resp *providers.LLMResponse
			var err error
			if stream {
				resp, err = p.Stream(t.Context(), userReq("hi"), func(providers.Delta) {})
			} else {
				resp, err = p.Chat(t.Context(), userReq("hi"))
			}
			if err != nil {
				t.Fatalf("stream=%v: %v", stream, err)
			}
			w := want
			if none {
				w = providers.Usage{}
			}
			if diff := cmp.Diff(w, resp.Usage); diff != "" {
				t.Errorf("stream=%v noUsage=%v: usage (-want +got):\n%s", stream, none, diff)
			}
			if resp.Usage.Reported() == none {
				t.Errorf("stream=%v noUsage=%v: Reported() = %v", stream, none, resp.Usage.Reported())
			}
		}
	}
}
