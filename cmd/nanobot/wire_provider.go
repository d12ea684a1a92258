package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/backends"
)

// providerSettings converts the config's providers to the registry's shape.
func providerSettings(c *configs.Config) map[string]providers.Settings {
	out := map[string]providers.Settings{}
	for name, p := range c.Providers {
		out[name] = providers.Settings{APIKey: p.APIKey, APIBase: p.APIBase, APIVersion: p.APIVersion, ExtraHeaders: p.ExtraHeaders}
	}
	return out
}

// buildProvider resolves the model (and fallbacks) to providers and builds
// the chain. When nothing resolves, the gateway still runs: every turn
// answers with how to add a key. It returns the chain, the model, the
// primary provider's config name ("" when none resolved) and a note on how
// it was chosen.
func buildProvider(c *configs.Config, log *slog.Logger) (providers.Provider, string, string, string, error) {
	d := c.Agents.Defaults
	opts := providers.Options{
		Backends:          backends.All(),
		RequestTimeout:    time.Duration(d.RequestTimeoutS) * time.Second,
		StreamIdleTimeout: time.Duration(d.StreamIdleTimeoutS) * time.Second,
		Logger:            log,
	}
	p, ress, err := providers.NewChain(d.Model, d.FallbackModels, d.Provider, providerSettings(c), opts)
	if err != nil {
		log.Warn("no usable LLM provider; the agent will answer with setup instructions", "model", d.Model, "err", err)
		return unconfigured{reason: err.Error()}, d.Model, "", "none: " + err.Error(), nil
	}
	note := fmt.Sprintf("%s (%s)", ress[0].Provider, ress[0].Reason)
	log.Debug("provider resolved", "model", d.Model, "provider", ress[0].Provider, "reason", ress[0].Reason)
	return p, d.Model, ress[0].Provider, note, nil
}
