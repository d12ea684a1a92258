package main

import (
	"sync"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/providers"
)

// rateLimits is the composition root's one set of provider rate limiters
// for the config in use: every provider chain built from that config (the
// agents' models, fallbacks, presets) shares its buckets. A reloaded
// config gets fresh limiters; chains built before keep theirs.
var rateLimits struct {
	mu  sync.Mutex
	cfg *configs.Config
	lim *providers.RateLimiters
}

// rateLimitsOf returns the limiters of c (providers.<name>.rateLimit).
func rateLimitsOf(c *configs.Config) *providers.RateLimiters {
	rateLimits.mu.Lock()
	defer rateLimits.mu.Unlock()
	if rateLimits.cfg == c && rateLimits.lim != nil {
		return rateLimits.lim
	}
	cfg := map[string]providers.RateLimitConfig{}
	for name, p := range c.Providers {
		if p.RateLimit == nil {
			continue
		}
		rl := providers.RateLimitConfig{RateLimit: providers.RateLimit{RPM: p.RateLimit.RPM, TPM: p.RateLimit.TPM}}
		for m, ml := range p.RateLimit.Models {
			if rl.Models == nil {
				rl.Models = map[string]providers.RateLimit{}
			}
			rl.Models[m] = providers.RateLimit{RPM: ml.RPM, TPM: ml.TPM}
		}
		// Providers are resolved by their registry name ("lmStudio" and
		// "azure-openai" are spellings of lmstudio and azure_openai); an
		// entry that stands for another provider when it has a key
		// (xaiGrok with an apiKey is xai) limits that one, unless the
		// provider's own entry does.
		keyed := false
		if spec, ok := providers.Lookup(name); ok {
			name = spec.Name
			if spec.KeyedAs != "" && p.APIKey != "" {
				name, keyed = spec.KeyedAs, true
			}
		}
		if _, own := cfg[name]; own && keyed {
			continue
		}
		cfg[name] = rl
	}
	rateLimits.cfg, rateLimits.lim = c, providers.NewRateLimiters(cfg)
	return rateLimits.lim
}
