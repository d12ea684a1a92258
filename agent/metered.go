package agent

import (
	"context"
	"time"

	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

// meteredProvider is the provider for model calls made outside a turn
// (memory consolidation, the heartbeat's decision): the runner's provider,
// with every call held against the budgets first and recorded in the usage
// ledger (and told to the observer) afterwards, under source and charged to
// the conversation named by the call context, or to fallback when the
// context names none. A used-up budget fails the call with a
// *usage.BudgetError before the provider is reached.
type meteredProvider struct {
	r      *Runner
	source string
}

var _ providers.Provider = meteredProvider{}

// Metered returns the runner's provider metered like a turn's calls: held
// to the budgets and recorded in the usage ledger under source, charged to
// the conversation named by each call's context (tools.WithCallContext).
// Services that call the model on their own (the heartbeat) use it so that
// no model call goes unmetered.
func (r *Runner) Metered(source string) providers.Provider {
	return meteredProvider{r: r, source: source}
}

// consolidationContext names the conversation m belongs to on ctx, so the
// consolidation calls made for sess are charged to it.
func consolidationContext(ctx context.Context, channel, chatID, senderID, sessionKey string, admin bool) context.Context {
	return tools.WithCallContext(ctx, tools.CallContext{
		Channel: channel, ChatID: chatID, SenderID: senderID, SessionKey: sessionKey,
		Source: usage.SourceConsolidation, Admin: admin,
	})
}

func (p meteredProvider) Chat(ctx context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
	return p.call(ctx, req, func(ctx context.Context) (*providers.LLMResponse, error) {
		return p.r.Provider.Chat(ctx, req)
	})
}

func (p meteredProvider) Stream(ctx context.Context, req providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	return p.call(ctx, req, func(ctx context.Context) (*providers.LLMResponse, error) {
		return p.r.Provider.Stream(ctx, req, onDelta)
	})
}

func (p meteredProvider) call(ctx context.Context, req providers.ChatRequest, do func(context.Context) (*providers.LLMResponse, error)) (*providers.LLMResponse, error) {
	cc, _ := tools.CallContextFrom(ctx)
	cc.Source = p.source
	ctx = tools.WithCallContext(ctx, cc)
	rsv, err := p.r.reserveBudget(ctx, req.Messages, req.Tools)
	if err != nil {
		return nil, err
	}
	defer rsv.Release() // after observeLLM put the real usage in the ledger
	ctx = p.r.withAttempts(ctx)
	start := time.Now()
	resp, err := do(ctx)
	p.r.observeLLM(ctx, start, req.Messages, req.Tools, resp, err)
	return resp, err
}
