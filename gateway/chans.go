// Channels on the gateway's side: building the enabled ones, and the gate
// every inbound message passes (allow lists, pairing, counting) on its way
// to the inbox.

package gateway

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/api"
	"github.com/nanobot-go/nanobot/gateway/journal"
	"github.com/nanobot-go/nanobot/gateway/relay"
)

// buildChannels builds the enabled channels, the access gate in front of
// the inbox, the manager that supervises them and the dispatcher that
// delivers to them.
func (g *Gateway) buildChannels() error {
	if g.runsChannels() {
		if g.o.Channels != nil {
			// Channels the caller built (Extra) are configured but not
			// built from the registry.
			cc := g.cfg.Channels
			cc.Platforms = maps.Clone(cc.Platforms)
			for _, c := range g.o.Extra {
				delete(cc.Platforms, c.Name())
			}
			built, err := g.o.Channels.Build(cc, channels.Deps{Log: g.log, Paths: g.o.Paths, Loopback: g.loopback(), Redact: g.o.Redact, Commands: g.chatCommands()})
			if err != nil {
				return err
			}
			g.chans = built
		}
		g.chans = append(g.chans, g.o.Extra...)
		a, err := g.newAPI()
		if err != nil {
			return err
		}
		if a != nil {
			g.chans = append(g.chans, a)
		}
	}
	g.gate = &relay.Gate{
		AllowFrom: allowLists(g.cfg, g.chans),
		Admins:    adminLists(g.cfg),
		Pairing:   relay.NewPairingStore(filepath.Join(g.o.Paths.State, "pairing.json")),
		Reply:     g.be.PublishOutbound,
		Log:       g.log.With("component", "access"),
		Next:      channels.InboxFunc(g.accept),
	}
	if g.o.Approvals != nil {
		g.o.Approvals.SetNotifier(func(ctx context.Context, m bus.Outbound) error {
			m.Content = g.o.Redact.String(m.Content)
			return g.be.PublishOutbound(ctx, m)
		})
	}
	g.mgr = relay.NewManager(relay.ManagerConfig{Inbox: &countedGate{gate: g.gate, metrics: g.metrics}, Log: g.log, Redact: g.o.Redact.String}, g.chans)
	g.metrics.WatchChannels(g.mgr.Health)
	dcfg := relay.DispatcherConfig{
		SendProgress: g.cfg.Channels.SendProgress, SendToolHints: g.cfg.Channels.SendToolHints,
		MaxRetries: g.cfg.Channels.SendMaxRetries, Observer: g.metrics, Log: g.log,
		PerChannel: map[string]relay.ProgressPolicy{}, WorkerIdle: g.o.DeliveryIdle,
	}
	for _, name := range g.cfg.Channels.Names() {
		if cc := g.cfg.Channels.Common(name); cc.SendProgress != nil || cc.SendToolHints != nil || cc.ToolHintPrefix != nil {
			p := relay.ProgressPolicy{SendProgress: cc.SendProgress, SendToolHints: cc.SendToolHints}
			if cc.ToolHintPrefix != nil {
				prefix := *cc.ToolHintPrefix
				if prefix != "" && !strings.HasSuffix(prefix, " ") && !strings.HasSuffix(prefix, "\n") {
					prefix += " "
				}
				p.ToolHintPrefix = &prefix
			}
			dcfg.PerChannel[name] = p
		}
	}
	dcfg.Handled = g.be.delivered() // in a cluster: acknowledged once the platform took it
	g.dl.configure(&dcfg)
	g.disp = relay.NewDispatcher(dcfg, g.chans)
	g.metrics.WatchDelivery(g.disp.Stats)
	return nil
}

// accept takes a message the gate let through into the inbox.
func (g *Gateway) accept(ctx context.Context, m bus.Inbound) error {
	if m.ReceivedAt.IsZero() {
		m.ReceivedAt = time.Now()
	}
	if ok, tell := g.screen(m); !ok {
		if tell {
			g.rateNotice(ctx, m)
		}
		return nil
	}
	err := g.dl.accept(ctx, g.be, m)
	if errors.Is(err, journal.ErrDuplicate) {
		g.metrics.Inbound(m.Channel, "duplicate")
		return nil
	}
	if err != nil {
		return err
	}
	g.metrics.Inbound(m.Channel, "accepted")
	return nil
}

// allowLists collects each channel's allowFrom.
func allowLists(cfg *configs.Config, chans []channels.Channel) map[string][]string {
	allow := map[string][]string{}
	for _, name := range cfg.Channels.Names() {
		allow[name] = cfg.Channels.Common(name).AllowFrom
	}
	allow[api.Name] = []string{"*"} // the API key is the access check
	for _, c := range chans {
		if _, ok := allow[c.Name()]; !ok {
			allow[c.Name()] = cfg.Channels.Common(c.Name()).AllowFrom
		}
		if d, ok := c.(channels.AllowDefaulter); ok && allow[c.Name()] == nil {
			allow[c.Name()] = d.DefaultAllowFrom()
		}
		if sa, ok := c.(channels.SenderAuthenticator); ok && sa.AuthenticatesSenders() {
			allow[c.Name()] = []string{"*"} // the channel checked the sender itself
		}
	}
	return allow
}

// admitterFunc adapts a function to message.Targets.
type admitterFunc func(channel, id string) bool

func (f admitterFunc) Admits(channel, id string) bool { return f(channel, id) }

// countedGate counts the messages the gate denies.
type countedGate struct {
	gate    *relay.Gate
	metrics *Metrics
}

func (c *countedGate) Deliver(ctx context.Context, m bus.Inbound) error {
	err := c.gate.Deliver(ctx, m)
	if errors.Is(err, channels.ErrDenied) {
		c.metrics.Inbound(m.Channel, "denied")
	}
	return err
}

// Admits implements channels.Admitter.
func (c *countedGate) Admits(channel, senderID string) bool { return c.gate.Admits(channel, senderID) }

var _ channels.LossCounter = (*countedGate)(nil)

// CountLost implements channels.LossCounter.
func (c *countedGate) CountLost(channel string) { c.metrics.Inbound(channel, "lost") }
