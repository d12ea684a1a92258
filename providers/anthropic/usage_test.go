package anthropic_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// Cache reads and writes come from cache_read_input_tokens and
// cache_creation_input_tokens, streaming (message_start, then the output
// count in message_delta) and not; prompt tokens count them in, the
// OpenAI way, so the ledger reads one shape.
func TestUsageFromTheWire(t *testing.T) {
	wire := &providertest.Usage{PromptTokens: 50, CompletionTokens: 420, CacheReadTokens: 3000, CacheWriteTokens: 700}
	want := providers.Usage{PromptTokens: 3750, CompletionTokens: 420, TotalTokens: 4170, CacheReadTokens: 3000, CacheWriteTokens: 700}
	for _, stream := range []bool{false, true} {
		srv := providertest.New(t)
		srv.Push(providertest.Reply{Text: "ok", Usage: wire})
		resp := call(t, newProvider(t, srv), stream, userReq("hi"), func(providers.Delta) {})
		if diff := cmp.Diff(want, resp.Usage); diff != "" {
			t.Errorf("stream=%v: usage (-want +got):\n%s", stream, diff)
		}
	}
}
