package main

import (
	"context"

	"github.com/nanobot-go/nanobot/providers"
)

// unconfigured answers when no provider could be resolved: every turn tells
// the user how to add a key, instead of the gateway refusing to start.
type unconfigured struct{ reason string }

func (u unconfigured) err() error {
	msg := "No LLM provider is configured yet. Add an API key to config.json (for example providers.anthropic.apiKey, or export ANTHROPIC_API_KEY with the starter config from `nanobot onboard`), then restart the gateway."
	if u.reason != "" {
		msg += " (" + u.reason + ")"
	}
	return &providers.Error{Provider: "none", Message: msg}
}

func (u unconfigured) Chat(context.Context, providers.ChatRequest) (*providers.LLMResponse, error) {
	return nil, u.err()
}

func (u unconfigured) Stream(context.Context, providers.ChatRequest, func(providers.Delta)) (*providers.LLMResponse, error) {
	return nil, u.err()
}
