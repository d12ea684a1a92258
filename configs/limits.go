package configs

import (
	"fmt"
	"strings"
)

// LimitsConfig are usage budgets: how many tokens or US dollars the
// instance, each agent, each chat and each sender may spend in a day and
// in a month (days and months of agents.defaults.timezone). When one is
// used up the sender is told which, and when it resets, and no model is
// called. See docs/usage.md ("Budgets"). Default: no budget.
type LimitsConfig struct {
	// Global caps every call of the instance together.
	Global BudgetConfig `json:"global,omitzero"`
	// PerSender caps each sender on their own (every sender gets this
	// allowance).
	PerSender BudgetConfig `json:"perSender,omitzero"`
	// PerChat caps each chat (conversation) on its own.
	PerChat BudgetConfig `json:"perChat,omitzero"`
	// PerAgent caps the named agents (agents.list / agents.<name>;
	// "default" is agents.defaults).
	PerAgent map[string]BudgetConfig `json:"perAgent,omitempty"`
	// Exempt senders, as "channel:senderId" ("telegram:123456"), are never
	// limited.
	Exempt []string `json:"exempt,omitempty"`
	// ExemptAdmins also exempts senders their channel vouches for as
	// admins (the channel's admins list, the local web chat).
	ExemptAdmins bool `json:"exemptAdmins,omitempty"`
}

// BudgetConfig is one budget; a zero field is no cap.
type BudgetConfig struct {
	// DailyTokens caps input plus output tokens per day.
	DailyTokens int64 `json:"dailyTokens,omitempty"`
	// MonthlyTokens caps input plus output tokens per calendar month.
	MonthlyTokens int64 `json:"monthlyTokens,omitempty"`
	// DailyCostUSD caps the cost per day, in US dollars. Calls to models
	// whose price is unknown are not counted (see docs/usage.md).
	DailyCostUSD float64 `json:"dailyCostUsd,omitempty"`
	// MonthlyCostUSD caps the cost per calendar month, in US dollars.
	MonthlyCostUSD float64 `json:"monthlyCostUsd,omitempty"`
}

// RateLimitConfig is a provider's proactive rate limit
// (providers.<name>.rateLimit): calls wait, showing typing, instead of
// earning 429s. See docs/usage.md ("Rate limits"). Default: none (the
// vendor's rate-limit headers are still honoured).
type RateLimitConfig struct {
	// RPM is requests per minute across all the provider's models,
	// spread evenly (0: no limit).
	RPM int `json:"rpm,omitempty"`
	// TPM is tokens per minute across all the provider's models (0: no
	// limit).
	TPM int `json:"tpm,omitempty"`
	// Models are limits of single models (by the model name sent to the
	// provider), on top of the provider's.
	Models map[string]ModelRateLimit `json:"models,omitempty"`
}

// ModelRateLimit is one model's rate limit.
type ModelRateLimit struct {
	// RPM is requests per minute (0: no limit).
	RPM int `json:"rpm,omitempty"`
	// TPM is tokens per minute (0: no limit).
	TPM int `json:"tpm,omitempty"`
}

func (v *validator) limits(c *Config) {
	l := c.Limits
	v.budget("limits.global", l.Global)
	v.budget("limits.perSender", l.PerSender)
	v.budget("limits.perChat", l.PerChat)
	for _, name := range sortedKeys(l.PerAgent) {
		p := "limits.perAgent." + name
		if _, ok := c.AgentNamed(name); !ok {
			v.add(p, "no agent %q (want default or a name from agents.list / agents.<name>)", name)
		}
		v.budget(p, l.PerAgent[name])
	}
	for i, e := range l.Exempt {
		ch, id, ok := strings.Cut(e, ":")
		v.require(ok && strings.TrimSpace(ch) != "" && strings.TrimSpace(id) != "",
			fmt.Sprintf("limits.exempt[%d]", i), `want "channel:senderId" like "telegram:123456", got %q`, e)
	}
	for _, name := range sortedKeys(c.Providers) {
		rl := c.Providers[name].RateLimit
		if rl == nil {
			continue
		}
		p := "providers." + name + ".rateLimit."
		v.require(rl.RPM >= 0, p+"rpm", "want 0 (no limit) or more requests per minute, got %d", rl.RPM)
		v.require(rl.TPM >= 0, p+"tpm", "want 0 (no limit) or more tokens per minute, got %d", rl.TPM)
		for _, m := range sortedKeys(rl.Models) {
			ml := rl.Models[m]
			mp := fmt.Sprintf("%smodels[%q].", p, m)
			v.require(ml.RPM >= 0, mp+"rpm", "want 0 (no limit) or more requests per minute, got %d", ml.RPM)
			v.require(ml.TPM >= 0, mp+"tpm", "want 0 (no limit) or more tokens per minute, got %d", ml.TPM)
		}
	}
}

func (v *validator) budget(path string, b BudgetConfig) {
	v.require(b.DailyTokens >= 0, path+".dailyTokens", "want 0 (no cap) or more tokens, got %d", b.DailyTokens)
	v.require(b.MonthlyTokens >= 0, path+".monthlyTokens", "want 0 (no cap) or more tokens, got %d", b.MonthlyTokens)
	v.require(b.DailyCostUSD >= 0, path+".dailyCostUsd", "want 0 (no cap) or more US dollars, got %g", b.DailyCostUSD)
	v.require(b.MonthlyCostUSD >= 0, path+".monthlyCostUsd", "want 0 (no cap) or more US dollars, got %g", b.MonthlyCostUSD)
	if b.DailyTokens > 0 && b.MonthlyTokens > 0 {
		v.require(b.DailyTokens <= b.MonthlyTokens, path+".dailyTokens", "is more than monthlyTokens (%d): the daily cap could never be reached", b.MonthlyTokens)
	}
	if b.DailyCostUSD > 0 && b.MonthlyCostUSD > 0 {
		v.require(b.DailyCostUSD <= b.MonthlyCostUSD, path+".dailyCostUsd", "is more than monthlyCostUsd (%g): the daily cap could never be reached", b.MonthlyCostUSD)
	}
}
