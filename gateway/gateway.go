package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/hooks"
	"github.com/nanobot-go/nanobot/agent/templates"
	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/cron"
	"github.com/nanobot-go/nanobot/gateway/heartbeat"
	"github.com/nanobot-go/nanobot/gateway/relay"
	"github.com/nanobot-go/nanobot/internal/owner"
	"github.com/nanobot-go/nanobot/tools/goals"
)

// Gateway is an assembled gateway: New builds every part without starting
// anything but the early /healthz; Run starts the services in order and
// stops them in reverse.
type Gateway struct {
	o       Options
	cfg     *configs.Config
	log     *slog.Logger
	started time.Time
	be      backend
	dl      *delivery
	agent   *agent.Agent // nil on a channels-only cluster instance
	multi   *multiAgent  // more agents and their router; nil with agents.defaults only
	presets presetProviders
	limiter *replyLimiter
	chans   []channels.Channel
	// owner is the instance's owner key (its access token and sign-in
	// codes); nil on a worker, which serves no owner routes. signIn: the
	// workbench is served, so announce prints a sign-in link.
	owner   *owner.Key
	signIn  bool
	gate    *relay.Gate
	mgr     *relay.Manager
	disp    *relay.Dispatcher
	metrics *Metrics
	usage   *usage.Ledger // nil on a channels-only cluster instance
	// budgets refuses calls over a budget; nil when none is set.
	budgets *usage.Budgets
	// early serves HTTP on ln from New (or from Run when the caller
	// brought a plain Listener); ownsLn: New opened or took over ln.
	early  *Early
	ln     net.Listener
	ownsLn bool
	// full is the whole HTTP handler, built by New and put in front by Run;
	// until then early answers /healthz only.
	full http.Handler
	// stopping is set when shutdown begins: /readyz fails, and turns
	// cancelled from then on are replayed at the next start.
	stopping atomic.Bool
	// reloads tracks what reloads applied and what waits for a restart.
	reloads reloads
}

// Run assembles and runs the gateway until ctx ends (New, then Run).
func Run(ctx context.Context, o Options) error {
	g, err := New(ctx, o)
	if err != nil {
		return err
	}
	return g.Run(ctx)
}

// New assembles the gateway: workspace, backend (local files, or NATS in
// cluster mode), agent, channels, dispatcher and HTTP server. It connects
// to NATS in cluster mode but starts nothing else; ctx bounds that
// connection. When it opens the listener itself (Options.Listener nil) it
// does so first and answers /healthz from then on, so a supervisor sees
// the process up while the rest is assembled; /readyz and every other
// path answer 503 until Run.
func New(ctx context.Context, o Options) (_ *Gateway, err error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 20 * time.Second
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	g := &Gateway{o: o, cfg: o.Config, log: o.Log, started: time.Now()}
	if err := g.listenEarly(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			g.closeEarly()
		}
	}()
	if err := g.prepareWorkspace(); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	if g.be, err = openBackend(ctx, o); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	defer func() {
		if err != nil {
			g.be.close()
		}
	}()
	if g.runsChannels() {
		if g.owner, err = owner.Load(owner.Path(o.Paths.State)); err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
		// The token is the owner's whole credential: never in a log, a
		// tool result or a reply.
		o.Redact.Keep(g.owner.Token())
	}
	g.metrics = NewMetrics(g.depth)
	g.log = g.be.observe(g.metrics.Registry, g.log)
	if g.dl, err = openDelivery(g.cfg, o.Paths, g.be.journal(), o.StorageOpen, g.be.PublishOutbound, g.metrics, g.log); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = g.dl.Close()
		}
	}()
	g.limiter = &replyLimiter{max: g.cfg.Agents.Defaults.MaxRepliesPerMinute, win: map[string]*chatWindow{}}
	if g.runsAgent() {
		if g.usage, err = g.openUsage(ctx); err != nil {
			return nil, err
		}
		g.budgets = Budgets(g.cfg, g.usage, g.log)
		defer func() {
			if err != nil {
				_ = g.usage.Close()
			}
		}()
	}
	if g.agent, err = g.newAgent(); err != nil {
		return nil, err
	}
	if err = g.buildAgents(); err != nil {
		return nil, err
	}
	if err = g.buildChannels(); err != nil {
		return nil, err
	}
	if err = g.buildHTTP(); err != nil {
		return nil, err
	}
	return g, nil
}

// openBackend chooses local files or the NATS cluster, by config.
func openBackend(ctx context.Context, o Options) (backend, error) {
	role := o.Role
	if role == "" {
		role = o.Config.Cluster.Role
	}
	if role == "" {
		role = RoleAll
	}
	if role != RoleAll && role != RoleChannels && role != RoleWorker {
		return nil, fmt.Errorf("unknown role %q (want all, channels or worker)", role)
	}
	jobs := o.CronStore
	if jobs == nil {
		jobs = cron.NewStore(filepath.Join(o.Paths.Cron, "jobs.json"))
	}
	if o.Config.Cluster.Enabled() {
		return openCluster(ctx, o, role, jobs)
	}
	if role != RoleAll {
		return nil, fmt.Errorf("role %q needs cluster.nats.url (see docs/cluster.md)", role)
	}
	return openLocal(o, jobs)
}

func (g *Gateway) prepareWorkspace() error {
	if err := g.o.Paths.Ensure(); err != nil {
		return err
	}
	created, err := templates.Sync(g.o.Paths.Workspace)
	if err != nil {
		return err
	}
	if len(created) > 0 {
		g.log.Info("workspace templates created", "workspace", g.o.Paths.Workspace, "files", len(created))
	}
	return nil
}

// runsAgent and runsChannels say which halves this process runs (both,
// unless it is one role of a cluster).
func (g *Gateway) runsAgent() bool    { return g.be.runsAgent() }
func (g *Gateway) runsChannels() bool { return g.be.runsChannels() }

func (g *Gateway) newAgent() (*agent.Agent, error) {
	if !g.runsAgent() {
		return nil, nil
	}
	return g.agentFor(g.cfg.AgentList()[0])
}

// canSpeak reports whether the named channel can deliver a voice reply.
// A worker without channels (cluster) cannot know and lets it through;
// the channel's process sends it as it can.
func (g *Gateway) canSpeak(name string) bool {
	if !g.runsChannels() {
		return true
	}
	for _, c := range g.chans {
		if c.Name() == name {
			return channels.CanSpeak(c)
		}
	}
	return false
}

// turnDone marks a finished message in the inbox and counts the turn.
func (g *Gateway) turnDone(m bus.Inbound, err error) {
	outcome := "ok"
	switch {
	case errors.Is(err, context.Canceled) && g.stopping.Load(), errors.Is(err, agent.ErrHandedBack):
		g.be.Done(m, true, err) // replayed at the next start, or redelivered
		return
	case errors.Is(err, agent.ErrNotSaved):
		// Answered (maybe) but not in its session: left unfinished, so
		// the next start runs it again and the session gets it.
		g.metrics.Turn(time.Since(m.ReceivedAt), "error")
		g.be.Done(m, true, err)
		return
	case errors.Is(err, context.Canceled):
		outcome = "stopped"
	case errors.Is(err, agent.ErrQueueFull):
		outcome = "refused"
	case err != nil:
		outcome = "error"
	}
	if !m.ReceivedAt.IsZero() {
		g.metrics.Turn(time.Since(m.ReceivedAt), outcome)
	}
	g.be.Done(m, false, err)
}

// loopback reports whether the HTTP server listens on loopback only.
func (g *Gateway) loopback() bool {
	if g.o.Listener != nil {
		return isLoopbackAddr(g.o.Listener.Addr())
	}
	return isLoopback(g.cfg.Gateway.Host)
}

// Run starts the services in order, serves until ctx ends or a service
// fails, then shuts down in reverse: stop intake, let running turns finish
// (DrainTimeout; unfinished ones are replayed at the next start), deliver
// what was said, stop serving HTTP.
func (g *Gateway) Run(ctx context.Context) error {
	defer g.be.close()
	defer g.dl.Close()
	if g.usage != nil {
		defer g.usage.Close()
	}
	svcs := newServices(g.log)
	list := append([]service{g.httpService()}, g.be.services(g)...)
	if err := svcs.start(ctx, list); err != nil {
		return err
	}
	g.announce()
	g.welcomeBack(ctx)
	runErr := g.wait(ctx, svcs.failed)
	g.log.Info("gateway stopping")
	g.stopping.Store(true)
	svcs.stop()
	g.log.Info("gateway stopped")
	return runErr
}

// wait serves until ctx ends or a service fails, applying reloads: on
// SIGHUP (Options.Reload) and when the config file changes.
func (g *Gateway) wait(ctx context.Context, failed <-chan error) error {
	changed := g.watchConfig(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-failed:
			g.log.Error("gateway failing", "err", err)
			return err
		case <-g.o.Reload:
			g.reload("SIGHUP")
		case <-changed:
			g.reload("the config file changed")
		}
	}
}

// agentService runs the agent on feed (which blocks until ctx ends), with
// the sub-agents and the idle memory release; on shutdown it first lets
// running turns finish, bounded by DrainTimeout.
func (g *Gateway) agentService(feed func(ctx context.Context) error) service {
	return service{name: "agent", run: func(ctx context.Context) error {
		var wg sync.WaitGroup
		wg.Go(func() { releaseWhenIdle(ctx, g.allIdle, g.cfg.Gateway.TrimCodePages, g.log) })
		wg.Go(func() { releaseAfterStart(ctx, g.allIdle, g.cfg.Gateway.TrimCodePages, g.log) })
		for _, a := range g.allAgents() {
			wg.Go(func() { a.Subagents.Wait(ctx) })
			wg.Go(func() {
				a.Loop.CompactWhenIdle(ctx, time.Duration(g.cfg.Agents.Defaults.IdleCompactCheckIntervalSeconds)*time.Second)
			})
			wg.Go(func() { a.Loop.DreamEvery(ctx, g.cfg.Agents.Defaults.Dream.Every()) })
		}
		err := feed(ctx)
		wg.Wait()
		return err
	}, drain: func() {
		ctx, cancel := context.WithTimeout(context.Background(), g.o.DrainTimeout)
		defer cancel()
		idle := true
		for _, a := range g.allAgents() {
			idle = a.WaitIdle(ctx) == nil && idle
		}
		if !idle {
			g.log.Warn("turns still running at the drain deadline; they are replayed at the next start", "drain", g.o.DrainTimeout)
		}
	}}
}

// runChannels supervises the channels until ctx ends (with none
// configured, it just waits).
func (g *Gateway) runChannels(ctx context.Context) error {
	err := g.mgr.Run(ctx)
	<-ctx.Done()
	return err
}

// background runs cron and the heartbeat until ctx ends.
func (g *Gateway) background(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { _ = cron.New(g.be.cronStore(), g.be.PublishInbound, g.log).Run(ctx) })
	if hb := g.cfg.Gateway.Heartbeat; hb.Enabled {
		h := heartbeat.New(heartbeat.Config{
			Workspace: g.o.Paths.Workspace, Interval: time.Duration(hb.IntervalS) * time.Second,
			Provider: g.agent.Runner.Metered(bus.SourceHeartbeat.String()), Model: g.o.Model,
			Publish: g.be.PublishInbound, Target: g.agent.LastActive,
			Goals: goals.NewStore(agent.GoalsFile(g.o.Paths)),
			Log:   g.log, OnDecision: g.metrics.Heartbeat,
		})
		wg.Go(func() { _ = h.Run(ctx) })
	}
	wg.Wait()
	return nil
}

// Status reports the gateway's state (/api/status, `nanobot status`).
func (g *Gateway) Status(ctx context.Context) Status {
	inQ, outQ := g.depth()
	ready, _ := g.mgr.Ready()
	st := Status{Version: g.o.Version, Ready: ready, Channels: g.mgr.Health(), Inbound: inQ, Outbound: outQ,
		Pending: g.be.Pending(), PendingReplies: g.dl.pending(), Started: g.started, Cluster: g.be.status(ctx), Reload: g.reloads.status()}
	if g.o.MCP != nil {
		st.MCP = g.o.MCP.Status()
	}
	if hs, ok := g.o.Hooks.(interface{ Stats() []hooks.Stat }); ok {
		st.Hooks = hs.Stats()
	}
	return st
}

// depth is how many messages wait for the agent and for delivery: in the
// bus's queues, and past them in the agents' session queues and the
// dispatcher's chat queues (each bounded; docs/gateway.md). It is read at
// scrape and status time, after New built all of them.
func (g *Gateway) depth() (in, out int) {
	in, out = g.be.Depth()
	if g.multi != nil || g.agent != nil {
		for _, a := range g.allAgents() {
			in += a.Queued()
		}
	}
	if g.disp != nil {
		out += g.disp.Stats().Queued
	}
	return in, out
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func isLoopbackAddr(a net.Addr) bool {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.IsLoopback()
	}
	return false
}
