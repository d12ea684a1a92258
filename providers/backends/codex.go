package backends

import (
	"context"

	"github.com/nanobot-go/nanobot/providers"
)

// codexProvider is the registry name of the ChatGPT sign-in provider.
const codexProvider = "openai-codex"

// codex adapts requests to what ChatGPT's Codex endpoint
// (chatgpt.com/backend-api/codex/responses) accepts: only streamed
// requests (a non-streamed one is answered 400 "Stream must be set to
// true"), and no max_output_tokens or temperature (answered 400
// "Unsupported parameter"). The Responses backend underneath does the
// rest (store:false, instructions, encrypted reasoning). Safe for
// concurrent use when the wrapped provider is.
type codex struct {
	p providers.Provider
}

var _ providers.Provider = codex{}

// Chat serves a whole answer through a stream.
func (c codex) Chat(ctx context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
	return c.p.Stream(ctx, codexRequest(req), func(providers.Delta) {})
}

// Stream implements providers.Provider.
func (c codex) Stream(ctx context.Context, req providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	if onDelta == nil {
		onDelta = func(providers.Delta) {}
	}
	return c.p.Stream(ctx, codexRequest(req), onDelta)
}

// codexRequest drops the sampling limits the Codex endpoint refuses; the
// service applies its own.
func codexRequest(req providers.ChatRequest) providers.ChatRequest {
	req.MaxTokens = 0
	req.Temperature = nil
	return req
}
