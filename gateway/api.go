package gateway

import (
	"slices"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/gateway/api"
	"github.com/nanobot-go/nanobot/providers"
)

// newAPI builds the OpenAI-compatible API (a channel of the gateway, not
// a platform from the registry) when api.enabled and this process runs
// the channels. Every request needs a key: api.apiKey, api.apiKeys or the
// instance's access token.
func (g *Gateway) newAPI() (*api.Channel, error) {
	c := g.cfg.API
	if !c.Enabled || !g.runsChannels() {
		return nil, nil
	}
	shared, own := c.Keys(), []string(nil)
	if !c.ShareSessions {
		shared, own = nil, nil
		if k := strings.TrimSpace(c.APIKey); k != "" {
			shared = []string{k}
		}
		for _, k := range c.APIKeys {
			if k = strings.TrimSpace(k); k != "" && !slices.Contains(shared, k) {
				own = append(own, k)
			}
		}
	}
	// With no provider configured every turn would only say so: the API
	// says it up front, as a 503 a client can act on.
	var unconfigured string
	if u, ok := g.o.Provider.(providers.Unconfigured); ok {
		unconfigured = u.Message()
	}
	// The API counts its own turns: in a cluster the agent's cap is on
	// other workers, and locally the default (the agent's cap) keeps API
	// requests from queueing inside the agent behind each other.
	maxTurns := c.MaxConcurrent
	if maxTurns <= 0 {
		maxTurns = g.cfg.Agents.Defaults.MaxConcurrentTurns
	}
	return api.New(api.Config{
		Keys: shared, ClientKeys: own, Owner: g.owner, CORSOrigins: c.CORSOrigins, MaxBodyBytes: c.MaxBodyBytes,
		MaxUploadBytes: c.MaxUploadBytes, RequestsPerMinute: c.RateLimit.RequestsPerMinute,
		MediaDir: g.o.Paths.Media, StateDir: g.o.Paths.State, Unconfigured: unconfigured,
		Model: g.cfg.Agents.Defaults.Model, MaxConcurrent: maxTurns,
		QueueTimeout: time.Duration(c.QueueTimeoutMs) * time.Millisecond, Log: g.log,
	}), nil
}
