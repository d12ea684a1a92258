package gateway

import (
	"log/slog"

	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/configs"
)

// Budgets is the budgets of cfg (the limits section) enforced over led;
// nil when there is no ledger or no budget is set.
func Budgets(cfg *configs.Config, led *usage.Ledger, log *slog.Logger) *usage.Budgets {
	l := cfg.Limits
	lim := usage.Limits{
		Global: budget(l.Global), PerSender: budget(l.PerSender), PerChat: budget(l.PerChat),
		Exempt: l.Exempt, ExemptAdmins: l.ExemptAdmins,
	}
	for name, b := range l.PerAgent {
		if lim.PerAgent == nil {
			lim.PerAgent = map[string]usage.Budget{}
		}
		lim.PerAgent[name] = budget(b)
	}
	if led == nil || lim.Empty() {
		return nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return usage.NewBudgets(led, lim, log.With("component", "budgets"))
}

func budget(b configs.BudgetConfig) usage.Budget {
	return usage.Budget{DailyTokens: b.DailyTokens, MonthlyTokens: b.MonthlyTokens, DailyCostUSD: b.DailyCostUSD, MonthlyCostUSD: b.MonthlyCostUSD}
}
