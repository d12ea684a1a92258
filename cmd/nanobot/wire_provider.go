package main

import (
	"log/slog"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/providers"
)

// buildProvider resolves the model to a provider and builds it.
func buildProvider(c *configs.Config, log *slog.Logger) (providers.Provider, string, string, error) {
	return unconfigured{}, c.Agents.Defaults.Model, "none", nil
}
