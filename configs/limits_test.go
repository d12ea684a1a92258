package configs

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLimits(t *testing.T) {
	l := load(t, `{
		"agents": {"list": [{"name": "work", "model": "gpt-4o"}]},
		"providers": {"openai": {"apiKey": "k", "rateLimit": {"rpm": 60, "tpm": 100000, "models": {"gpt-4o": {"rpm": 10}}}}},
		"limits": {
			"global": {"dailyCostUsd": 5, "monthlyCostUsd": 50},
			"perSender": {"dailyTokens": 200000},
			"perChat": {"monthlyTokens": 1000000},
			"perAgent": {"work": {"dailyCostUsd": 2}},
			"exempt": ["telegram:123"],
			"exemptAdmins": true
		}}`)
	want := LimitsConfig{
		Global:    BudgetConfig{DailyCostUSD: 5, MonthlyCostUSD: 50},
		PerSender: BudgetConfig{DailyTokens: 200000},
		PerChat:   BudgetConfig{MonthlyTokens: 1000000},
		PerAgent:  map[string]BudgetConfig{"work": {DailyCostUSD: 2}},
		Exempt:    []string{"telegram:123"}, ExemptAdmins: true,
	}
	if diff := cmp.Diff(want, l.Config.Limits); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
	wantRL := &RateLimitConfig{RPM: 60, TPM: 100000, Models: map[string]ModelRateLimit{"gpt-4o": {RPM: 10}}}
	if diff := cmp.Diff(wantRL, l.Config.Providers["openai"].RateLimit); diff != "" {
		t.Errorf("rateLimit (-want +got):\n%s", diff)
	}

	bad := []struct{ body, want string }{
		{`{"limits": {"perSender": {"dailyTokens": -1}}}`, `limits.perSender.dailyTokens: want 0 (no cap) or more tokens`},
		{`{"limits": {"global": {"dailyCostUsd": 10, "monthlyCostUsd": 5}}}`, `limits.global.dailyCostUsd: is more than monthlyCostUsd`},
		{`{"limits": {"perAgent": {"ghost": {"dailyTokens": 5}}}}`, `limits.perAgent.ghost: no agent "ghost"`},
		{`{"limits": {"exempt": ["123"]}}`, `limits.exempt[0]: want "channel:senderId"`},
		{`{"limits": {"perChat": {"dailyTokens": "lots"}}}`, `limits.perChat.dailyTokens: want integer, got string`},
		{`{"providers": {"openai": {"rateLimit": {"rpm": -5}}}}`, `providers.openai.rateLimit.rpm: want 0 (no limit) or more`},
		{`{"providers": {"openai": {"rateLimit": {"models": {"gpt-4o": {"tpm": -1}}}}}}`, `providers.openai.rateLimit.models["gpt-4o"].tpm: want 0 (no limit) or more`},
	}
	for _, b := range bad {
		_, err := Load(Options{Path: writeConfig(t, b.body), Environ: []string{}})
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: error %v, want it to contain %q", b.body, err, b.want)
		}
	}
}

// A config without limits does not grow a "limits" section when saved.
func TestNoLimitsNotWritten(t *testing.T) {
	b, err := json.Marshal(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"global"`) || strings.Contains(string(b), `"perSender"`) {
		t.Errorf("marshalled empty config mentions limits: %s", b)
	}
}
