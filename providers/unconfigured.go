package providers

import (
	"context"
	"errors"
	"strings"
)

// ErrNotConfigured is the cause (Error.Err) of every answer of Unconfigured.
var ErrNotConfigured = errors.New("no LLM provider is configured")

// Unconfigured stands in when no provider could be resolved from the
// config: every call fails with how to add a key, instead of the gateway
// refusing to start. Callers that can say so up front (the HTTP API
// answers 503) detect it by type.
type Unconfigured struct {
	// Reason is why resolving failed (no key for the model's provider, ...).
	Reason string
}

// Message tells the user how to configure a provider: what the model
// lacks, or why the provider it resolved to cannot be used.
func (u Unconfigured) Message() string {
	const then = "then restart the gateway (or run the `nanobot agent` command again)."
	reason := strings.TrimPrefix(u.Reason, "resolve provider: ")
	switch {
	case reason == "":
		return "No LLM provider is configured yet. Add an API key to config.json (for example providers.anthropic.apiKey, or export ANTHROPIC_API_KEY with the starter config from `nanobot onboard`), " + then
	case strings.HasPrefix(reason, "no provider configured"):
		return "No LLM provider is configured yet: " + reason + "; " + then
	}
	return "The LLM provider cannot be used: " + reason + ". Fix it in config.json, " + then
}

func (u Unconfigured) err() error {
	return &Error{Provider: "none", Message: u.Message(), Err: ErrNotConfigured}
}

// Chat implements Provider: it always fails.
func (u Unconfigured) Chat(context.Context, ChatRequest) (*LLMResponse, error) {
	return nil, u.err()
}

// Stream implements Provider: it always fails.
func (u Unconfigured) Stream(context.Context, ChatRequest, func(Delta)) (*LLMResponse, error) {
	return nil, u.err()
}
