package agent

import (
	"context"

	"github.com/nanobot-go/nanobot/agent/memory"
	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

// defaultReplyEstimate is the reply size held against budgets when the
// runner sets no MaxTokens.
const defaultReplyEstimate = 4096

// reserveBudget checks the caller's budgets before a provider call and
// holds the call's estimate (the prompt as counted here plus the reply
// cap) until the returned reservation is released, after the call's
// record is in the ledger. A used-up budget returns a *usage.BudgetError;
// the call must not be made.
func (r *Runner) reserveBudget(ctx context.Context, conv []providers.Message, defs []providers.ToolDefinition) (*usage.Reservation, error) {
	if r.Budgets == nil {
		return nil, nil
	}
	c := usage.Caller{Agent: r.Agent, Provider: r.ProviderName, Model: r.Model}
	if c.Agent == "" {
		c.Agent = DefaultAgentName
	}
	if cc, ok := tools.CallContextFrom(ctx); ok {
		c.Channel, c.Sender, c.Session, c.Admin = cc.Channel, cc.SenderID, cc.SessionKey, cc.Admin
	}
	out := int64(r.MaxTokens)
	if out <= 0 {
		out = defaultReplyEstimate
	}
	return r.Budgets.Reserve(c, usage.Estimate{Input: int64(memory.EstimateTokens(conv, defs)), Output: out})
}
