package gateway

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/routing"
	"github.com/nanobot-go/nanobot/agent/templates"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

// multiAgent is what a config with more agents, bindings or identity links
// adds: one agent per profile and the router in front of them. A gateway
// with only agents.defaults has none and runs today's single loop.
type multiAgent struct {
	router *routing.Router
	byName map[string]*agent.Agent
	names  []string // default first, then the config's order
}

// routed reports whether the config needs the router.
func routed(c *configs.Config) bool {
	return len(c.Agents.List) > 0 || len(c.Agents.Named) > 0 || len(c.Bindings) > 0 || len(c.IdentityLinks) > 0
}

// buildAgents assembles the agents of a routed config; the default one
// is g.agent.
func (g *Gateway) buildAgents() error {
	if !g.runsAgent() || !routed(g.cfg) {
		return nil
	}
	ma := &multiAgent{router: routing.New(g.cfg), byName: map[string]*agent.Agent{configs.DefaultAgent: g.agent}, names: []string{configs.DefaultAgent}}
	for _, prof := range g.cfg.AgentList()[1:] {
		a, err := g.agentFor(prof)
		if err != nil {
			return fmt.Errorf("gateway: agent %q (%s): %w", prof.Name, prof.Path, err)
		}
		ma.byName[prof.Name] = a
		ma.names = append(ma.names, prof.Name)
	}
	g.multi = ma
	g.log.Info("agents ready", "agents", ma.names, "bindings", len(g.cfg.Bindings))
	return nil
}

// agentFor assembles agent prof through agent.New, the same way for every
// agent. The default one works in the instance's paths with the backend's
// sessions and Options' provider and tools; any other in its own
// workspace and sessions, with its own model and tools where Options can
// build them.
func (g *Gateway) agentFor(prof configs.Agent) (*agent.Agent, error) {
	paths, store := g.o.Paths, g.be.sessions()
	provider, model, providerName, reg := g.o.Provider, g.o.Model, g.o.ProviderName, g.o.Tools
	if prof.Name != configs.DefaultAgent {
		paths = g.o.Paths.ForAgent(prof)
		for _, dir := range []string{paths.Workspace, paths.Sessions} {
			if err := mkdirPrivate(dir); err != nil {
				return nil, err
			}
		}
		if _, err := templates.Sync(paths.Workspace); err != nil {
			return nil, err
		}
		var err error
		if store, err = g.be.agentSessions(paths.Sessions, g.log); err != nil {
			return nil, err
		}
		if g.o.BuildModel != nil {
			provider, model, providerName = g.o.BuildModel(prof.Settings)
		}
		reg = nil
		if g.o.ToolsFor != nil {
			if reg, err = g.o.ToolsFor(prof, paths); err != nil {
				return nil, err
			}
		}
	}
	if reg == nil {
		reg = tools.NewRegistry(tools.WithLogger(g.log), tools.WithRedactor(g.o.Redact))
	}
	return agent.New(g.cfg, paths, agent.Deps{
		Embedding: g.embeddingFor(prof),
		Agent:     prof.Name, Provider: provider, Model: model, ProviderName: providerName, Tools: reg, Store: store,
		// The gate is built after the default agent; agents run only after New.
		Targets:       admitterFunc(func(ch, id string) bool { return g.gate != nil && g.gate.Admits(ch, id) }),
		Out:           g.dl.publisher(g.be),
		Inbound:       g.be.PublishInbound,
		MemoryLock:    g.be.memoryLock(),
		Observer:      agent.Observers(g.metrics, g.o.Observer),
		OnTurnDone:    g.turnDone,
		Admit:         g.be.admission(),
		Redact:        g.o.Redact,
		Presets:       g.presetsFor(prof),
		Usage:         g.usage,
		Budgets:       g.budgets,
		Voice:         agent.VoiceConfig{Speaker: g.o.Speaker, CanSpeak: g.canSpeak},
		Transcription: g.o.Transcription,
		Approvals:     g.o.Approvals,
		Restart:       g.restartFunc(),
		Hooks:         g.o.Hooks,
		SwitchSkill: func() func(string, bool) ([]string, error) {
			if g.o.SwitchSkill == nil {
				return nil
			}
			return func(name string, disabled bool) ([]string, error) { return g.o.SwitchSkill(prof, name, disabled) }
		}(),
		Log: g.log,
	})
}

// embeddingFor is agent a's embedding model for memory_search, or nil;
// one that cannot be built is logged and searches rank by words.
func (g *Gateway) embeddingFor(a configs.Agent) *agent.Embedding {
	if g.o.BuildEmbedding == nil || a.Settings.Memory.EmbeddingModel == "" {
		return nil
	}
	e, err := g.o.BuildEmbedding(a.Settings)
	if err != nil {
		g.log.Warn("memory_search ranks by words alone: the embedding model cannot be used", "agent", a.Name, "model", a.Settings.Memory.EmbeddingModel, "err", err)
		return nil
	}
	return e
}

// presetsFor is what /model offers agent a: its presets (all when it
// lists none), each built once.
func (g *Gateway) presetsFor(a configs.Agent) agent.Presets {
	if len(g.cfg.ModelPresets) == 0 || g.o.BuildPreset == nil {
		return agent.Presets{}
	}
	names := a.Presets
	if names == nil {
		for n := range g.cfg.ModelPresets {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	return agent.Presets{Names: names, Resolve: func(name string) (agent.Model, error) {
		p, ok := g.cfg.ModelPresets[name]
		if !ok {
			return agent.Model{}, fmt.Errorf("no preset %q in modelPresets", name)
		}
		prov, err := g.presetProvider(name, p)
		if err != nil {
			return agent.Model{}, err
		}
		return agent.Model{Provider: prov, Model: p.Model, MaxTokens: p.MaxTokens, Temperature: p.Temperature,
			ReasoningEffort: p.ReasoningEffort, ContextWindowTokens: p.ContextWindowTokens}, nil
	}}
}

// presetProviders caches a provider per preset across agents.
type presetProviders struct {
	mu    sync.Mutex
	built map[string]providers.Provider
}

func (g *Gateway) presetProvider(name string, p configs.ModelPreset) (providers.Provider, error) {
	g.presets.mu.Lock()
	defer g.presets.mu.Unlock()
	if prov, ok := g.presets.built[name]; ok {
		return prov, nil
	}
	prov, err := g.o.BuildPreset(p)
	if err != nil {
		return nil, err
	}
	if g.presets.built == nil {
		g.presets.built = map[string]providers.Provider{}
	}
	g.presets.built[name] = prov
	return prov, nil
}

// allAgents lists the running agents, the default first.
func (g *Gateway) allAgents() []*agent.Agent {
	if g.multi == nil {
		return []*agent.Agent{g.agent}
	}
	out := make([]*agent.Agent, 0, len(g.multi.names))
	for _, n := range g.multi.names {
		out = append(out, g.multi.byName[n])
	}
	return out
}

// route picks the agent of m and sets the routing fields on it.
func (g *Gateway) route(m *bus.Inbound) *agent.Agent {
	d := g.multi.router.Route(*m)
	a, ok := g.multi.byName[d.Agent]
	if !ok {
		// A message journalled for an agent since removed from the config.
		g.log.Warn("message for an unknown agent goes to the default agent", "agent", d.Agent, "session", m.Key())
		d.Agent, a = configs.DefaultAgent, g.agent
	}
	d.Apply(m)
	return a
}

// submit hands m to its agent (the cluster worker's feed).
func (g *Gateway) submit(ctx context.Context, m bus.Inbound) {
	if g.multi == nil {
		g.agent.Submit(ctx, m)
		return
	}
	g.route(&m).Submit(ctx, m)
}

// stopSession stops a session in every agent (the cluster's revoke).
func (g *Gateway) stopSession(key string) {
	for _, a := range g.allAgents() {
		a.StopSession(key)
	}
}

// runAgents feeds in to the agents until in closes or ctx ends. With one
// agent it is that agent's loop; with several, each runs its own loop fed
// by the router here.
func (g *Gateway) runAgents(ctx context.Context, in <-chan bus.Inbound) error {
	if g.multi == nil {
		return g.agent.Run(ctx, in)
	}
	feeds := make(map[*agent.Agent]chan bus.Inbound, len(g.multi.names))
	var wg sync.WaitGroup
	for _, a := range g.allAgents() {
		ch := make(chan bus.Inbound)
		feeds[a] = ch
		wg.Go(func() { _ = a.Run(ctx, ch) })
	}
	defer func() {
		for _, ch := range feeds {
			close(ch)
		}
		wg.Wait()
	}()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case m, ok := <-in:
			if !ok {
				return nil
			}
			a := g.route(&m)
			select {
			case feeds[a] <- m:
			case <-ctx.Done():
				g.turnDone(m, ctx.Err())
				return ctx.Err()
			}
		}
	}
}

// allIdle reports whether no agent has work.
func (g *Gateway) allIdle() bool {
	return !slices.ContainsFunc(g.allAgents(), func(a *agent.Agent) bool { return !a.Idle() })
}

// replyLimiter caps the messages answered per chat and minute
// (agents.defaults.maxRepliesPerMinute), so two bots in a chat cannot keep
// each other talking. A fixed one-minute window per chat; windows that
// ended are forgotten as new ones open.
type replyLimiter struct {
	max int
	mu  sync.Mutex
	win map[string]*chatWindow
}

type chatWindow struct {
	start  time.Time
	n      int
	warned bool
}

// allow counts one message of chat at now and reports whether it may be
// answered; warn is true the first time a window refuses one.
func (r *replyLimiter) allow(chat string, now time.Time) (ok, warn bool) {
	if r == nil || r.max <= 0 {
		return true, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.win[chat]
	if w == nil || now.Sub(w.start) >= time.Minute {
		if w == nil && len(r.win) >= 1024 {
			for k, old := range r.win {
				if now.Sub(old.start) >= time.Minute {
					delete(r.win, k)
				}
			}
		}
		if w == nil {
			w = &chatWindow{}
			r.win[chat] = w
		}
		*w = chatWindow{start: now}
	}
	w.n++
	if w.n <= r.max {
		return true, false
	}
	warn = !w.warned
	w.warned = true
	return false, warn
}

// screen drops what the agents must not answer: messages other bots sent
// (unless allowed) and messages beyond a chat's reply cap. It reports
// whether m may go on, and whether the chat should be told, once a
// window, that its messages are being skipped (never a bot: that would
// feed the loop the cap is there to stop).
func (g *Gateway) screen(m bus.Inbound) (ok, tell bool) {
	if m.Source != bus.SourceUser {
		return true, false
	}
	if m.FromBot && !g.cfg.Agents.Defaults.AllowBotMessages {
		g.metrics.Inbound(m.Channel, "bot")
		g.log.Debug("message from a bot ignored", "channel", m.Channel, "chat_id", m.ChatID)
		return false, false
	}
	ok, warn := g.limiter.allow(m.Channel+":"+m.ChatID, m.ReceivedAt)
	if !ok {
		g.metrics.Inbound(m.Channel, "rate_limited")
		if warn {
			g.log.Warn("chat over agents.defaults.maxRepliesPerMinute; ignoring its messages for the rest of the minute",
				"channel", m.Channel, "chat_id", m.ChatID, "max", g.limiter.max)
		}
	}
	return ok, warn && !m.FromBot
}

// rateNotice tells a chat over its reply cap that its messages are being
// skipped, so the bot never goes quiet without a word.
func (g *Gateway) rateNotice(ctx context.Context, m bus.Inbound) {
	text := fmt.Sprintf("⏸️ This chat sent more than %d messages in a minute, so I'm skipping new ones until the minute is over. "+
		"Please send again after that what you still want answered.", g.limiter.max)
	notice := bus.Outbound{Channel: m.Channel, ChatID: m.ChatID, Kind: bus.KindMessage, Content: text,
		ReplyTo: m.MessageID, Metadata: m.Metadata, ThreadID: m.ThreadID, SessionKey: m.Key(), IsError: true}
	if err := g.dl.notify(ctx, notice); err != nil {
		g.log.Warn("rate notice not sent", "channel", m.Channel, "err", err)
	}
}

func mkdirPrivate(dir string) error { return os.MkdirAll(dir, 0o700) }
