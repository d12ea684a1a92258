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
