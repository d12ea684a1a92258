package usage

import (
	"regexp"
	"strings"

	"github.com/nanobot-go/nanobot/providers"
)

// PricesAsOf is the date the built-in price table was checked against the
// vendors' public price pages. Prices change: override them with
// providers.<name>.prices in the config (docs/usage.md).
const PricesAsOf = "2025-10-01"

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	Input  float64
	Output float64
	// CachedInput is the price of prompt tokens read from the cache; nil:
	// they cost Input.
	CachedInput *float64
	// CacheWrite is the price of prompt tokens written to the cache
	// (Anthropic charges more for them); nil: they cost Input.
	CacheWrite *float64
}

// Cost is what r's tokens cost at p, in US dollars.
func (p Price) Cost(r *Record) float64 {
	uncached := r.Input - r.CacheRead - r.CacheWrite
	if uncached < 0 {
		uncached = 0
	}
	cached, write := p.Input, p.Input
	if p.CachedInput != nil {
		cached = *p.CachedInput
	}
	if p.CacheWrite != nil {
		write = *p.CacheWrite
	}
	return (float64(uncached)*p.Input + float64(r.CacheRead)*cached +
		float64(r.CacheWrite)*write + float64(r.Output)*p.Output) / 1e6
}

func usd(v float64) *float64 { return &v }

// builtin holds the list prices, by vendor then model, as the vendors
// publish them in US dollars (standard tier, shortest context band). Only
// figures we are sure of are here; a missing model costs "unknown", never
// 0. Vendors that bill in yuan on their default endpoint (DashScope,
// Zhipu, SiliconFlow, VolcEngine) are left to config overrides.
var builtin = map[string]map[string]Price{
	"openai": {
		"gpt-5":        {Input: 1.25, CachedInput: usd(0.125), Output: 10},
		"gpt-5-mini":   {Input: 0.25, CachedInput: usd(0.025), Output: 2},
		"gpt-5-nano":   {Input: 0.05, CachedInput: usd(0.005), Output: 0.40},
		"gpt-4.1":      {Input: 2, CachedInput: usd(0.50), Output: 8},
		"gpt-4.1-mini": {Input: 0.40, CachedInput: usd(0.10), Output: 1.60},
		"gpt-4.1-nano": {Input: 0.10, CachedInput: usd(0.025), Output: 0.40},
		"gpt-4o":       {Input: 2.50, CachedInput: usd(1.25), Output: 10},
		"gpt-4o-mini":  {Input: 0.15, CachedInput: usd(0.075), Output: 0.60},
		"o1":           {Input: 15, CachedInput: usd(7.50), Output: 60},
		"o3":           {Input: 2, CachedInput: usd(0.50), Output: 8},
		"o3-mini":      {Input: 1.10, CachedInput: usd(0.55), Output: 4.40},
		"o4-mini":      {Input: 1.10, CachedInput: usd(0.275), Output: 4.40},
		// Embeddings (memory_search with memory.embeddingModel): input only.
		"text-embedding-3-small": {Input: 0.02},
		"text-embedding-3-large": {Input: 0.13},
		"text-embedding-ada-002": {Input: 0.10},
	},
	"anthropic": {
		"claude-opus-4-1":   {Input: 15, CachedInput: usd(1.50), CacheWrite: usd(18.75), Output: 75},
		"claude-opus-4":     {Input: 15, CachedInput: usd(1.50), CacheWrite: usd(18.75), Output: 75},
		"claude-sonnet-4-5": {Input: 3, CachedInput: usd(0.30), CacheWrite: usd(3.75), Output: 15},
		"claude-sonnet-4":   {Input: 3, CachedInput: usd(0.30), CacheWrite: usd(3.75), Output: 15},
		"claude-3-7-sonnet": {Input: 3, CachedInput: usd(0.30), CacheWrite: usd(3.75), Output: 15},
		"claude-3-5-sonnet": {Input: 3, CachedInput: usd(0.30), CacheWrite: usd(3.75), Output: 15},
		"claude-haiku-4-5":  {Input: 1, CachedInput: usd(0.10), CacheWrite: usd(1.25), Output: 5},
		"claude-3-5-haiku":  {Input: 0.80, CachedInput: usd(0.08), CacheWrite: usd(1), Output: 4},
		"claude-3-haiku":    {Input: 0.25, CachedInput: usd(0.03), CacheWrite: usd(0.30), Output: 1.25},
	},
	"deepseek": {
		// DeepSeek-V3.2 behind both names (cache miss / hit / output).
		"deepseek-chat":     {Input: 0.28, CachedInput: usd(0.028), Output: 0.42},
		"deepseek-reasoner": {Input: 0.28, CachedInput: usd(0.028), Output: 0.42},
	},
	"gemini": {
		"gemini-2.5-pro":        {Input: 1.25, Output: 10},
		"gemini-2.5-flash":      {Input: 0.30, Output: 2.50},
		"gemini-2.5-flash-lite": {Input: 0.10, Output: 0.40},
		"gemini-2.0-flash":      {Input: 0.10, CachedInput: usd(0.025), Output: 0.40},
	},
	"groq": {
		"llama-3.3-70b-versatile": {Input: 0.59, Output: 0.79},
		"llama-3.1-8b-instant":    {Input: 0.05, Output: 0.08},
	},
	"moonshot": {
		"kimi-k2-0905-preview": {Input: 0.60, CachedInput: usd(0.15), Output: 2.50},
		"kimi-k2-0711-preview": {Input: 0.60, CachedInput: usd(0.15), Output: 2.50},
	},
	"minimax": {
		"minimax-m2": {Input: 0.30, Output: 1.20},
	},
}

// passThrough maps the vendor prefix of a gateway's model name
// ("anthropic/claude-sonnet-4") to the vendor whose prices the gateway
// passes through. Only OpenRouter is known to charge list prices.
var passThrough = map[string]string{
	"openai": "openai", "anthropic": "anthropic", "deepseek": "deepseek", "google": "gemini",
	"moonshotai": "moonshot", "minimax": "minimax",
}

// datedSuffix is a snapshot date after a model's name: "-20250514",
// "-2024-08-06", "-latest".
var datedSuffix = regexp.MustCompile(`^-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$`)

// Prices looks prices up: the config's overrides first, then local
// providers (free), then the built-in table.
//
// Provider names are matched as the provider registry matches them, so an
// override under "azureOpenai" or "azure-openai" prices the calls the
// ledger records under "azure_openai". A provider the registry does not
// know (a config-named OpenAI-compatible endpoint such as "companyProxy",
// or "custom") is priced by its model when the model is in the built-in
// table ("gpt-4o", "anthropic/claude-sonnet-4"); otherwise its price is
// unknown, never 0.
type Prices struct {
	overrides map[string]map[string]Price // by foldName(provider)
}

// NewPrices returns the price list with overrides (provider config name ->
// model name -> price) over the built-in table. overrides may be nil.
func NewPrices(overrides map[string]map[string]Price) *Prices {
	p := &Prices{overrides: map[string]map[string]Price{}}
	for name, models := range overrides {
		key := foldName(name)
		if p.overrides[key] == nil {
			p.overrides[key] = map[string]Price{}
		}
		for m, pr := range models {
			p.overrides[key][m] = pr
		}
	}
	return p
}

// foldName is the provider name with case and separators folded, as
// providers.Lookup compares them: "azureOpenai", "azure-openai" and
// "azure_openai" are one provider, "companyProxy" and "company_proxy" too.
func foldName(s string) string {
	return nameFolder.Replace(strings.ToLower(strings.TrimSpace(s)))
}

// nameFolder drops the separators foldName ignores (built once: a
// Replacer costs about 6 KB to build, and every model call asks).
var nameFolder = strings.NewReplacer("_", "", "-", "", " ", "")

// Lookup returns the price of model on provider, and false when it is not
// known.
func (p *Prices) Lookup(provider, model string) (Price, bool) {
	if p != nil {
		if m, ok := p.overrides[foldName(provider)]; ok {
			if pr, ok := m[model]; ok {
				return pr, true
			}
			if _, bare, ok := strings.Cut(model, "/"); ok {
				if pr, ok := m[bare]; ok {
					return pr, true
				}
			}
		}
	}
	if provider == "" {
		return Price{}, false
	}
	spec, known := providers.Lookup(provider)
	if known && spec.IsLocal {
		return Price{}, true
	}
	name := strings.ToLower(model)
	if !known || spec.Name == "custom" {
		return lookupByModel(name)
	}
	vendor := spec.Name
	if prefix, rest, ok := strings.Cut(name, "/"); ok {
		switch {
		case prefix == vendor:
			name = rest
		case vendor == "openrouter":
			vendor, name = passThrough[prefix], rest
		default:
			return Price{}, false
		}
	}
	return lookupBuiltin(vendor, name)
}

// lookupByModel prices a model served by an endpoint the registry does not
// know: "vendor/model" from that vendor's table, a bare name from the one
// table that lists it (model names do not repeat across vendors).
func lookupByModel(model string) (Price, bool) {
	if prefix, rest, ok := strings.Cut(model, "/"); ok {
		vendor, ok := passThrough[prefix]
		if !ok {
			return Price{}, false
		}
		return lookupBuiltin(vendor, rest)
	}
	for vendor := range builtin {
		if pr, ok := lookupBuiltin(vendor, model); ok {
			return pr, true
		}
	}
	return Price{}, false
}

func lookupBuiltin(vendor, model string) (Price, bool) {
	table := builtin[vendor]
	if pr, ok := table[model]; ok {
		return pr, true
	}
	if vendor == "anthropic" && strings.Contains(model, ".") {
		// OpenRouter writes versions with a dot: "claude-sonnet-4.5".
		return lookupBuiltin(vendor, strings.ReplaceAll(model, ".", "-"))
	}
	best := ""
	for name := range table {
		if len(name) > len(best) && strings.HasPrefix(model, name) && datedSuffix.MatchString(model[len(name):]) {
			best = name
		}
	}
	if best == "" {
		return Price{}, false
	}
	return table[best], true
}

// Cost prices r, nil when the price is unknown.
func (p *Prices) Cost(r *Record) *float64 {
	pr, ok := p.Lookup(r.Provider, r.Model)
	if !ok {
		return nil
	}
	c := pr.Cost(r)
	return &c
}
