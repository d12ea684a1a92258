package usage

import (
	"math"
	"testing"
)

func TestPrices(t *testing.T) {
	override := Price{Input: 1, Output: 2, CachedInput: usd(0.5)}
	p := NewPrices(map[string]map[string]Price{
		"openai":      {"gpt-4o": override},
		"custom":      {"my-model": {Input: 3, Output: 4}},
		"azureOpenai": {"gpt-4o": override},
	})
	r := Record{Input: 1_000_000, CacheRead: 400_000, Output: 100_000}
	cases := []struct {
		provider, model string
		want            *float64 // nil: unknown
	}{
		{"openai", "gpt-4o", usd(0.6*1 + 0.4*0.5 + 0.1*2)},                         // the override wins
		{"openai", "gpt-4o-mini", usd(0.6*0.15 + 0.4*0.075 + 0.1*0.60)},            // built in
		{"openai", "gpt-4o-mini-2024-07-18", usd(0.6*0.15 + 0.4*0.075 + 0.1*0.60)}, // dated snapshot
		{"openai", "o3-pro", nil},                                                  // not a snapshot of o3
		{"anthropic", "claude-opus-4-5-20251101", nil},                             // not in the table; not priced as opus 4
		{"anthropic", "claude-sonnet-4-20250514", usd(0.6*3 + 0.4*0.30 + 0.1*15)},
		{"openrouter", "anthropic/claude-sonnet-4", usd(0.6*3 + 0.4*0.30 + 0.1*15)},   // pass-through
		{"openrouter", "anthropic/claude-sonnet-4.5", usd(0.6*3 + 0.4*0.30 + 0.1*15)}, // OpenRouter's dotted version
		{"openrouter", "meta-llama/llama-3.3-70b-instruct", nil},
		{"openai", "text-embedding-3-small", usd(1 * 0.02)}, // memory_search's embeddings (input only; cached tokens cost input)
		{"custom", "my-model", usd(1*3 + 0.1*4)},            // no cached price: cached tokens cost input
		{"custom", "other", nil},
		{"custom", "gpt-4o-mini", usd(0.6*0.15 + 0.4*0.075 + 0.1*0.60)},                  // an endpoint the registry does not know: priced by model
		{"companyProxy", "gpt-4o-mini-2024-07-18", usd(0.6*0.15 + 0.4*0.075 + 0.1*0.60)}, // a config-named endpoint, dated model
		{"companyProxy", "anthropic/claude-sonnet-4", usd(0.6*3 + 0.4*0.30 + 0.1*15)},
		{"companyProxy", "acme/gpt-4o", nil},                     // a vendor prefix we do not know
		{"companyProxy", "in-house-7b", nil},                     // unknown stays unknown, not 0
		{"Azure-OpenAI", "gpt-4o", usd(0.6*1 + 0.4*0.5 + 0.1*2)}, // the override under "azureOpenai", found by the ledger's spelling
		{"azure_openai", "gpt-4o", usd(0.6*1 + 0.4*0.5 + 0.1*2)},
		{"azure_openai", "gpt-4.1", nil},                   // a registry provider without a table: unknown
		{"lm_studio", "qwen3", usd(0)},                     // an alias of a local provider: free
		{"OpenAI", "gpt-4o", usd(0.6*1 + 0.4*0.5 + 0.1*2)}, // case folded for overrides too
		{"ollama", "llama3.2", usd(0)},                     // local: free
		{"vllm", "whatever", usd(0)},
		{"siliconflow", "deepseek-ai/DeepSeek-V3", nil},
		{"", "gpt-4o", nil},
	}
	for _, c := range cases {
		rr := r
		rr.Provider, rr.Model = c.provider, c.model
		got := p.Cost(&rr)
		switch {
		case c.want == nil && got != nil:
			t.Errorf("%s/%s: cost %g, want unknown", c.provider, c.model, *got)
		case c.want != nil && got == nil:
			t.Errorf("%s/%s: cost unknown, want %g", c.provider, c.model, *c.want)
		case c.want != nil && math.Abs(*got-*c.want) > 1e-9:
			t.Errorf("%s/%s: cost %g, want %g", c.provider, c.model, *got, *c.want)
		}
	}
}

// Anthropic cache writes cost more than plain input.
func TestCacheWritePrice(t *testing.T) {
	r := Record{Provider: "anthropic", Model: "claude-sonnet-4-5", Input: 1_000_000, CacheWrite: 1_000_000}
	got := NewPrices(nil).Cost(&r)
	if got == nil || math.Abs(*got-3.75) > 1e-9 {
		t.Errorf("1M cache-write tokens cost %v, want 3.75", got)
	}
}
