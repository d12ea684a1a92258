package main

import (
	"testing"

	"github.com/nanobot-go/nanobot/configs"
)

// Every chain built from one config shares its limiters, under the
// registry's name whatever the config's spelling; a new config gets new
// ones.
func TestRateLimitsOfConfig(t *testing.T) {
	c := &configs.Config{Providers: map[string]configs.ProviderConfig{
		"lmStudio": {APIBase: "http://127.0.0.1:1234/v1", RateLimit: &configs.RateLimitConfig{RPM: 30}},
	}}
	a, b := rateLimitsOf(c), rateLimitsOf(c)
	if a != b || a.For("lmstudio") != b.For("lmstudio") {
		t.Error("two chains of one config got different limiters")
	}
	if c2 := *c; rateLimitsOf(&c2) == a {
		t.Error("a reloaded config kept the old limiters")
	}
	if !a.Configured("lmstudio") {
		t.Error(`providers.lmStudio.rateLimit did not reach the limiter of "lmstudio"`)
	}
}

// providers.xaiGrok with an apiKey is xai, so its rateLimit limits xai;
// signed in (no key) it limits xai-grok.
func TestRateLimitsOfKeyedXAIGrok(t *testing.T) {
	rl := &configs.RateLimitConfig{RPM: 10}
	keyed := rateLimitsOf(&configs.Config{Providers: map[string]configs.ProviderConfig{"xaiGrok": {APIKey: "k", RateLimit: rl}}})
	if !keyed.Configured("xai") || keyed.Configured("xai-grok") {
		t.Error("providers.xaiGrok.rateLimit with an apiKey does not limit xai")
	}
	signedIn := rateLimitsOf(&configs.Config{Providers: map[string]configs.ProviderConfig{"xaiGrok": {RateLimit: rl}}})
	if !signedIn.Configured("xai-grok") || signedIn.Configured("xai") {
		t.Error("providers.xaiGrok.rateLimit without an apiKey does not limit xai-grok")
	}
}
