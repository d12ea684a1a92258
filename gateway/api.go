package gateway

import (
	"fmt"
	"time"

	"github.com/nanobot-go/nanobot/gateway/api"
	"github.com/nanobot-go/nanobot/providers"
)

// newAPI builds the OpenAI-compatible API (a channel of the gateway, not
// a platform from the registry) when api.enabled and this process runs
// the channels. Without a key it is served only on a loopback bind: on
// any other, starting fails rather than opening the agent (and its tools)
// to the network.
func (g *Gateway) newAPI() (*api.Channel, error) {
	c := g.cfg.API
	if !c.Enabled || !g.runsChannels() {
		return nil, nil
	}
	keys := c.Keys()
	if len(keys) == 0 && !g.loopback() {
		bind := g.cfg.Gateway.Host
		if g.o.Listener != nil {
			bind = g.o.Listener.Addr().String()
		}
		return nil, fmt.Errorf("gateway: the OpenAI-compatible API has no key but the gateway listens beyond loopback (%s, gateway.host): set api.apiKey (or api.apiKeys), or set api.enabled to false", bind)
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
		Keys: keys, CORSOrigins: c.CORSOrigins, MaxBodyBytes: c.MaxBodyBytes,
		MaxUploadBytes: c.MaxUploadBytes, RequestsPerMinute: c.RateLimit.RequestsPerMinute,
		MediaDir: g.o.Paths.Media, StateDir: g.o.Paths.State, Unconfigured: unconfigured,
		Model: g.cfg.Agents.Defaults.Model, MaxConcurrent: maxTurns,
		QueueTimeout: time.Duration(c.QueueTimeoutMs) * time.Millisecond, Log: g.log,
	}), nil
}
