package gateway

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/configs"
)

// UsageDir is where an instance keeps its usage ledger.
func UsageDir(p configs.Paths) string { return filepath.Join(p.Dir, "usage") }

// openUsage opens the usage ledger of the agent half: one file per month,
// or in cluster mode one part per worker instance.
func (g *Gateway) openUsage(ctx context.Context) (*usage.Ledger, error) {
	opts := usage.Options{Prices: Prices(g.cfg), Location: g.cfg.Agents.Defaults.Location()}
	if inst := g.be.instance(); inst != "" {
		opts.Worker = strings.NewReplacer("/", "_", `\`, "_").Replace(inst)
	}
	led, err := usage.Open(ctx, UsageDir(g.o.Paths), opts)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	return led, nil
}

// Prices is the price list of cfg: providers.<name>.prices over the
// built-in table.
func Prices(cfg *configs.Config) *usage.Prices {
	over := map[string]map[string]usage.Price{}
	for name, pc := range cfg.Providers {
		for model, mp := range pc.Prices {
			if mp.Input == nil || mp.Output == nil {
				continue // validation rejects these
			}
			if over[name] == nil {
				over[name] = map[string]usage.Price{}
			}
			over[name][model] = usage.Price{Input: *mp.Input, Output: *mp.Output, CachedInput: mp.CachedInput, CacheWrite: mp.CacheWrite}
		}
	}
	return usage.NewPrices(over)
}
