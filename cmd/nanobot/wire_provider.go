package main

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/redact"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/auth"
	"github.com/nanobot-go/nanobot/providers/backends"
)

// providerSettings converts the config's providers to the registry's
// shape; sign-in providers count as configured when si holds a sign-in
// for them (si nil: none).
func providerSettings(c *configs.Config, si *auth.Manager) map[string]providers.Settings {
	out := map[string]providers.Settings{}
	for name, p := range c.Providers {
		out[name] = providers.Settings{APIKey: p.APIKey, APIBase: p.APIBase, APIVersion: p.APIVersion, ExtraHeaders: p.ExtraHeaders, API: p.WireAPI(),
			ExtraBody: extraBody(p, c.Agents.Defaults.ReasoningEffort), Proxy: p.Proxy, Region: p.Region, Profile: p.Profile,
			NoTextToolCalls: p.TextToolCalls != nil && !*p.TextToolCalls}
	}
	if si == nil {
		return out
	}
	stored, err := si.Store().Load()
	if err != nil {
		return out // the provider then says how to sign in; status shows the error
	}
	for _, name := range auth.Names() {
		if _, ok := stored[name]; !ok {
			continue
		}
		key := name
		for cfgName := range c.Providers {
			if spec, ok := providers.Lookup(cfgName); ok && spec.Name == name {
				key = cfgName
			}
		}
		st := out[key]
		st.SignedIn = true
		out[key] = st
	}
	return out
}

// extraBody is what a provider adds to every request body: the switch its
// thinkingStyle names, set from the agent's reasoningEffort ("none" turns
// thinking off, "" leaves the endpoint's default), then extraBody, which
// wins.
func extraBody(p configs.ProviderConfig, effort string) map[string]any {
	if p.ThinkingStyle == "" && len(p.ExtraBody) == 0 {
		return nil
	}
	out := map[string]any{}
	if effort != "" {
		on := effort != "none"
		switch p.ThinkingStyle {
		case "thinking_type":
			out["thinking"] = map[string]any{"type": map[bool]string{true: "enabled", false: "disabled"}[on]}
		case "enable_thinking":
			out["enable_thinking"] = on
		case "reasoning_split":
			out["reasoning_split"] = on
		}
	}
	for k, v := range p.ExtraBody {
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// signIn returns the instance's sign-in manager (token file
// <instance>/state/auth.json), built once per process so every agent
// shares its single-flight renewal.
func (a *app) signIn() *auth.Manager {
	if a.auth == nil {
		a.auth = newSignIn(a.loaded, a.log, a.redact)
	}
	return a.auth
}

func newSignIn(l *configs.Loaded, log *slog.Logger, red *redact.Redactor) *auth.Manager {
	eps := map[string]auth.Endpoints{}
	for cfgName, p := range l.Config.Providers {
		spec, ok := providers.Lookup(cfgName)
		if !ok || !spec.SignIn || p.SignIn == nil {
			continue
		}
		eps[spec.Name] = auth.Endpoints{
			AuthBase: p.SignIn.AuthBase, ExchangeBase: p.SignIn.ExchangeBase,
			ClientID: p.SignIn.ClientID, RedirectPort: p.SignIn.RedirectPort,
		}
	}
	return auth.New(auth.Options{
		Store:     auth.NewStore(filepath.Join(l.Paths.State, "auth.json")),
		Endpoints: eps,
		Redact:    red,
		Logger:    log,
	})
}

// buildProvider resolves the default agent's model (and fallbacks) to
// providers and builds the chain. When nothing resolves, the gateway still
// runs: every turn answers with how to add a key. It returns the chain, the
// model, the primary provider's config name ("" when none resolved) and a
// note on how it was chosen.
func buildProvider(c *configs.Config, log *slog.Logger, si *auth.Manager) (providers.Provider, string, string, string, error) {
	p, model, name, note := buildModel(c, c.AgentList()[0].Settings, log, si)
	return p, model, name, note, nil
}

// buildModel builds the provider chain of an agent's settings; an unusable
// model gives a provider that answers with setup instructions.
func buildModel(c *configs.Config, s configs.AgentDefaults, log *slog.Logger, si *auth.Manager) (providers.Provider, string, string, string) {
	models := []providers.ChainModel{{Model: s.Model, Provider: s.Provider}}
	for _, f := range s.FallbackModels {
		m, prov := c.Fallback(f)
		models = append(models, providers.ChainModel{Model: m, Provider: prov})
	}
	p, ress, err := providers.NewChainOf(models, providerSettings(c, si), providerOptions(c, s, log, si))
	if err != nil {
		log.Warn("no usable LLM provider; the agent will answer with setup instructions", "model", s.Model, "err", err)
		return providers.Unconfigured{Reason: err.Error()}, s.Model, "", "none: " + err.Error()
	}
	note := fmt.Sprintf("%s (%s)", ress[0].Provider, ress[0].Reason)
	log.Debug("provider resolved", "model", s.Model, "provider", ress[0].Provider, "reason", ress[0].Reason)
	return p, s.Model, ress[0].Provider, note
}

// buildPreset builds the provider of a model preset (/model), or says why
// it cannot be used.
func buildPreset(c *configs.Config, p configs.ModelPreset, log *slog.Logger, si *auth.Manager) (providers.Provider, error) {
	prov, _, err := providers.NewChainOf([]providers.ChainModel{{Model: p.Model, Provider: p.Provider}}, providerSettings(c, si), providerOptions(c, c.Agents.Defaults, log, si))
	return prov, err
}

func providerOptions(c *configs.Config, s configs.AgentDefaults, log *slog.Logger, si *auth.Manager) providers.Options {
	o := providers.Options{
		RateLimits:        rateLimitsOf(c),
		Backends:          backends.All(),
		RequestTimeout:    time.Duration(s.RequestTimeoutS) * time.Second,
		StreamIdleTimeout: time.Duration(s.StreamIdleTimeoutS) * time.Second,
		Logger:            log,
	}
	if si != nil {
		o.SignIn = si.Client
	}
	return o
}

// buildEmbedding builds the embedding model of an agent's settings
// (memory.embeddingModel), resolved like a chat model, or nil when none
// is set.
func buildEmbedding(c *configs.Config, s configs.AgentDefaults, log *slog.Logger, si *auth.Manager) (*agent.Embedding, error) {
	m := s.Memory
	if m.EmbeddingModel == "" {
		return nil, nil
	}
	res, err := providers.Resolve(m.EmbeddingModel, m.EmbeddingProvider, providerSettings(c, si))
	if err != nil {
		return nil, err
	}
	client, err := backends.Embedder(res, providerOptions(c, s, log, si))
	if err != nil {
		return nil, err
	}
	return &agent.Embedding{Client: client, Model: res.Model, Provider: res.Provider, Dimensions: m.EmbeddingDimensions}, nil
}
