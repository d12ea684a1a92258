package agent

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/configs"

	"github.com/nanobot-go/nanobot/agent/memory"
	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

// RunObserver is told about every provider call and tool execution of a
// run: metrics hang here. It is called from the run's goroutine for LLM
// calls and from the tool goroutines (concurrently) for tool calls, so
// implementations must be safe for concurrent use and must not block. ctx
// is the run's context: tools.CallContextFrom(ctx) names the channel, chat,
// session, sender and source.
type RunObserver interface {
	ObserveLLM(ctx context.Context, c LLMCall)
	ObserveTool(ctx context.Context, t ToolCall)
}

// Observers tells every non-nil observer, in order; nil when there are
// none.
func Observers(obs ...RunObserver) RunObserver {
	var out multiObserver
	for _, o := range obs {
		if o != nil {
			out = append(out, o)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return out
}

type multiObserver []RunObserver

func (m multiObserver) ObserveLLM(ctx context.Context, c LLMCall) {
	for _, o := range m {
		o.ObserveLLM(ctx, c)
	}
}

func (m multiObserver) ObserveTool(ctx context.Context, t ToolCall) {
	for _, o := range m {
		o.ObserveTool(ctx, t)
	}
}

// LLMCall is one provider call of a run.
type LLMCall struct {
	// Agent is the agent that made the call; Provider and Model what it
	// called.
	Agent    string
	Provider string
	Model    string
	Duration time.Duration
	// Usage is what the provider reported, or the estimate when it
	// reported nothing (Estimated). Zero when the call failed.
	Usage     providers.Usage
	Estimated bool
	// CostUSD is the call's cost as the usage ledger priced it; nil when
	// the price is unknown or there is no ledger.
	CostUSD *float64
	// Err is the call's error (nil on success).
	Err error
}

// ToolCall is one tool execution of a run.
type ToolCall struct {
	Name     string
	Duration time.Duration
	// Failed is set when the tool returned an error (the model got an
	// error result), including invalid arguments and unknown tools.
	Failed bool
}

// DefaultAgentName names the agent in the usage ledger when Deps.Agent
// is empty: the agent agents.defaults describes.
const DefaultAgentName = configs.DefaultAgent

// observeLLM records a provider call in the ledger and tells the observer.
// conv is what was sent, for the estimate when the provider reports no
// usage.
func (r *Runner) observeLLM(ctx context.Context, start time.Time, conv []providers.Message, defs []providers.ToolDefinition, resp *providers.LLMResponse, err error) {
	if r.Observer == nil && r.Ledger == nil || errors.Is(err, providers.ErrNotConfigured) {
		return // no provider: no call was made
	}
	c := LLMCall{Agent: r.Agent, Provider: r.ProviderName, Model: sentModel(r.ProviderName, r.Model), Duration: time.Since(start), Err: err}
	if resp != nil {
		if resp.Provider != "" {
			c.Provider = resp.Provider // a fallback answered
		}
		if resp.Model != "" {
			c.Model = resp.Model
		}
		c.Usage = resp.Usage
		if err == nil && !c.Usage.Reported() {
			c.Usage = estimateUsage(conv, defs, resp)
			c.Estimated = true
		}
	}
	r.record(ctx, c)
}

// withAttempts has a fallback chain's calls given up on recorded too: a
// failed call is a call (the ledger counts it, the budgets see it).
func (r *Runner) withAttempts(ctx context.Context) context.Context {
	if r.Observer == nil && r.Ledger == nil {
		return ctx
	}
	return providers.WithAttempts(ctx, func(a providers.Attempt) {
		r.record(ctx, LLMCall{Agent: r.Agent, Provider: a.Provider, Model: a.Model, Duration: a.Duration, Err: a.Err})
	})
}

// record puts c in the ledger and tells the observer.
func (r *Runner) record(ctx context.Context, c LLMCall) {
	if c.Agent == "" {
		c.Agent = DefaultAgentName
	}
	if r.Ledger != nil {
		rec := usageRecord(ctx, &c)
		stored, lerr := r.Ledger.Append(rec)
		if lerr != nil && r.Log != nil {
			r.Log.Error("recording usage failed", "err", lerr)
		}
		c.CostUSD = stored.CostUSD
	}
	if r.Observer != nil {
		r.Observer.ObserveLLM(ctx, c)
	}
}

// sentModel is the name a failed call is recorded under: the configured
// model without its provider's own "name/" prefix, as an answered call's
// model comes back (so one model is one row in `nanobot usage --by model`).
func sentModel(provider, model string) string {
	if rest, ok := strings.CutPrefix(model, provider+"/"); ok && provider != "" && rest != "" {
		return rest
	}
	return model
}

// estimateUsage counts tokens from the text when the provider reported
// none (some OpenAI-compatible servers do not).
func estimateUsage(conv []providers.Message, defs []providers.ToolDefinition, resp *providers.LLMResponse) providers.Usage {
	out := memory.EstimateText(resp.Content) + memory.EstimateText(resp.ReasoningContent)
	for _, tc := range resp.ToolCalls {
		out += memory.EstimateText(tc.Name) + memory.EstimateText(tc.RawArguments)
	}
	u := providers.Usage{PromptTokens: memory.EstimateTokens(conv, defs), CompletionTokens: out}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

func usageRecord(ctx context.Context, c *LLMCall) usage.Record {
	rec := usage.Record{
		Agent: c.Agent, Provider: c.Provider, Model: c.Model,
		Input: int64(c.Usage.PromptTokens), CacheRead: int64(c.Usage.CacheReadTokens),
		CacheWrite: int64(c.Usage.CacheWriteTokens), Output: int64(c.Usage.CompletionTokens),
		Reasoning: int64(c.Usage.ReasoningTokens), Latency: c.Duration, Outcome: outcomeOf(c.Err),
		Estimated: c.Estimated,
	}
	if cc, ok := tools.CallContextFrom(ctx); ok {
		rec.Channel, rec.Chat, rec.Session, rec.Sender, rec.Source = cc.Channel, cc.ChatID, cc.SessionKey, cc.SenderID, cc.Source
		if cc.SubAgent {
			rec.Source = "subagent"
		}
	}
	if rec.Source == "" {
		rec.Source = "user"
	}
	return rec
}

// outcomeOf classifies a call's error for the ledger.
func outcomeOf(err error) string {
	if err == nil {
		return usage.OutcomeOK
	}
	if errors.Is(err, context.Canceled) {
		return usage.OutcomeCancelled
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, providers.ErrRequestTimeout) || errors.Is(err, providers.ErrStreamIdle) {
		return usage.OutcomeTimeout
	}
	var pe *providers.Error
	if errors.As(err, &pe) {
		switch {
		case pe.StatusCode == 429:
			return usage.OutcomeRateLimited
		case pe.StatusCode > 0:
			return usage.OutcomeHTTP + strconv.Itoa(pe.StatusCode)
		case pe.Transient || strings.Contains(pe.Message, "network"):
			return usage.OutcomeNetwork
		}
	}
	return usage.OutcomeError
}
