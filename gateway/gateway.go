package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/memory"
	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/agent/skills"
	"github.com/nanobot-go/nanobot/agent/templates"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/web"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/bus"
	"github.com/nanobot-go/nanobot/gateway/bus/natsbus"
	"github.com/nanobot-go/nanobot/gateway/cron"
	"github.com/nanobot-go/nanobot/gateway/heartbeat"
	"github.com/nanobot-go/nanobot/gateway/journal"
	"github.com/nanobot-go/nanobot/gateway/wal"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
	jobs "github.com/nanobot-go/nanobot/tools/cron"
	"github.com/nanobot-go/nanobot/tools/mcp"
	"github.com/nanobot-go/nanobot/tools/message"
	"github.com/nanobot-go/nanobot/tools/spawn"
)

// Options are what cmd hands the gateway: the loaded config and the parts
// it built from it.
type Options struct {
	Config *configs.Config
	Paths  configs.Paths
	// Provider answers the agent (already wrapped in retries/fallbacks).
	Provider providers.Provider
	// Model is the model name sent to Provider.
	Model string
	// MCP reports the MCP servers in /api/status (nil: none).
	MCP interface{ Status() []mcp.Status }
	// Tools are offered to the agent. The gateway adds the tools that need
	// its runtime: message (the bus) and spawn (sub-agents). Nil: only
	// those.
	Tools *tools.Registry
	// Channels builds the enabled platform channels (nil: web chat only).
	Channels *channels.Registry
	// Extra are channels built by the caller (tests register fakes here).
	Extra []channels.Channel
	// Listener overrides gateway.host:port (tests pass 127.0.0.1:0).
	Listener net.Listener
	// Ready is called with the HTTP address once the gateway serves.
	Ready func(addr string)
	// DrainTimeout bounds how long running turns may finish on shutdown
	// (default 20 s); unfinished ones are replayed at the next start.
	DrainTimeout time.Duration
	// CronStore overrides the jobs store (default cron/jobs.json).
	CronStore *jobs.Store
	Log       *slog.Logger
	Version   string
	// Reload is signalled (SIGHUP) to re-read the config with ReloadConfig
	// and apply what can change live: the allow-lists.
	Reload       <-chan struct{}
	ReloadConfig func() (*configs.Config, error)
	// Stderr receives the one line with the web chat's access token (the
	// terminal, not the log: log files are kept and shipped). Default
	// os.Stderr.
	Stderr io.Writer
	// Role overrides cluster.role (the --role flag): RoleAll, RoleChannels
	// or RoleWorker. Roles other than all need cluster.nats.url.
	Role string
	// Instance names this process in the cluster (default: host name and
	// a random suffix).
	Instance string
	// StorageOpen opens the inbox journal and outbox files (default
	// os.OpenFile); tests inject storage faults (disk full) here.
	StorageOpen wal.OpenFunc
}

// Status is what /api/status reports (and `nanobot status` prints).
type Status struct {
	Version  string                     `json:"version"`
	Ready    bool                       `json:"ready"`
	Channels map[string]channels.Health `json:"channels"`
	Inbound  int                        `json:"inboundQueue"`
	Outbound int                        `json:"outboundQueue"`
	Pending  int                        `json:"pendingMessages"`
	// PendingReplies are replies not yet delivered (the outbox).
	PendingReplies int       `json:"pendingReplies"`
	Started        time.Time `json:"started"`
	// MCP are the MCP servers' connections.
	MCP []mcp.Status `json:"mcpServers,omitempty"`
	// Cluster is set in cluster mode.
	Cluster *ClusterStatus `json:"cluster,omitempty"`
}

// Run assembles and runs the gateway until ctx ends, then shuts down in
// order: stop intake, let running turns finish (DrainTimeout), flush
// outbound, close channels.
func Run(ctx context.Context, o Options) error {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg := o.Config
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 20 * time.Second
	}
	started := time.Now()
	if err := o.Paths.Ensure(); err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	if created, err := templates.Sync(o.Paths.Workspace); err != nil {
		return fmt.Errorf("gateway: %w", err)
	} else if len(created) > 0 {
		log.Info("workspace templates created", "workspace", o.Paths.Workspace, "files", len(created))
	}

	role := o.Role
	if role == "" {
		role = cfg.Cluster.Role
	}
	if role == "" {
		role = RoleAll
	}
	if role != RoleAll && role != RoleChannels && role != RoleWorker {
		return fmt.Errorf("gateway: unknown role %q (want all, channels or worker)", role)
	}
	runsAgent, runsChannels := role != RoleChannels, role != RoleWorker

	// The queues and storage: in memory and on disk by default, on NATS
	// JetStream in cluster mode.
	var (
		b      queues
		nb     *natsbus.Bus
		in     inbox
		store  session.Store
		replay []bus.Inbound
		jr     *journal.Journal
	)
	cronStore := o.CronStore
	if cronStore == nil {
		cronStore = jobs.NewStore(filepath.Join(o.Paths.Cron, "jobs.json"))
	}
	if cfg.Cluster.Enabled() {
		cl := cfg.Cluster
		nc, err := connectNATS(cl.NATS, "nanobot "+role, log)
		if err != nil {
			return fmt.Errorf("gateway: %w", err)
		}
		defer nc.Close()
		// NATS may still be starting (compose, Kubernetes): retry a while.
		err = natsbus.Retry(ctx, func(ctx context.Context) (err error) {
			nb, err = natsbus.Open(ctx, nc, natsbus.Options{
				Prefix: cl.Prefix, Partitions: cl.Partitions, LeaseTTL: time.Duration(cl.LeaseTTLS) * time.Second,
				AckWait: time.Duration(cl.AckWaitS) * time.Second, Instance: o.Instance, Role: role, Log: log,
			})
			return err
		})
		if err != nil {
			return fmt.Errorf("gateway: %w", err)
		}
		defer nb.Close() // idempotent; the shutdown below closes it in order
		b, in = nb, natsInbox{nb}
		if store, err = session.NewKVStore(ctx, nb.JetStream(), session.KVStoreOptions{
			Bucket: strings.ToUpper(cl.Prefix) + "_SESSIONS", Logger: log,
		}); err != nil {
			return fmt.Errorf("gateway: %w", err)
		}
		// Cron jobs live in NATS too, so every worker's cron tool and the
		// instance running the scheduler share them.
		if err := moveCronToKV(ctx, nb, cronStore, log); err != nil {
			return fmt.Errorf("gateway: %w", err)
		}
		log = log.With("role", role, "instance", nb.Options().Instance)
		log.Info("cluster mode", "nats", nc.ConnectedUrlRedacted(), "partitions", cl.Partitions)
	} else {
		if role != RoleAll {
			return fmt.Errorf("gateway: role %q needs cluster.nats.url (see docs/cluster.md)", role)
		}
		mem := bus.New(0, 0)
		b = mem
		j, pending, err := journal.Open(filepath.Join(o.Paths.State, "inbox.jsonl"), journal.Options{Log: log, Open: o.StorageOpen})
		if err != nil {
			return fmt.Errorf("gateway: %w", err)
		}
		defer j.Close()
		jr = j
		in, replay = journalInbox{jr: j, b: mem, log: log}, pending
		if store, err = session.NewFileStore(o.Paths.Sessions, session.FileStoreOptions{Logger: log}); err != nil {
			return fmt.Errorf("gateway: %w", err)
		}
	}
	metrics := NewMetrics(b.Depth)
	if nb != nil {
		registerClusterMetrics(metrics.Registry, nb, role)
	}
	dl, err := openDelivery(cfg, o.Paths, jr, o.StorageOpen, b.PublishOutbound, metrics, log)
	if err != nil {
		return err
	}
	defer dl.Close()

	d := cfg.Agents.Defaults
	loc := time.Local
	if d.Timezone != "" {
		if l, err := time.LoadLocation(d.Timezone); err == nil {
			loc = l
		}
	}
	temp := d.Temperature
	var shuttingDown atomic.Bool
	reg := o.Tools
	if reg == nil {
		reg = tools.NewRegistry(tools.WithLogger(log))
	}
	runner := &agent.Runner{
		Provider: o.Provider, Tools: reg, Model: o.Model, MaxTokens: d.MaxTokens,
		Temperature: &temp, ReasoningEffort: d.ReasoningEffort, MaxIterations: d.MaxToolIterations,
		Stream: true, Log: log,
	}
	subs := &agent.Subagents{Runner: *runner, Publish: b.PublishInbound, Max: d.MaxConcurrentSubagents, Workspace: o.Paths.Workspace, Log: log}
	for _, t := range []tools.Tool{message.New(dl.publisher(b), o.Paths.Workspace, cfg.Tools.RestrictToWorkspace), spawn.New(subs)} {
		if err := reg.Register(t); err != nil {
			return fmt.Errorf("gateway: %w", err)
		}
	}
	builder := &agent.ContextBuilder{Workspace: o.Paths.Workspace, Location: loc,
		Skills: skills.New(skills.Options{Workspace: o.Paths.Workspace, Logger: log})}
	memOpts := memory.Options{
		Workspace: o.Paths.Workspace, Provider: o.Provider, Model: o.Model, Store: store,
		ContextWindowTokens: d.ContextWindowTokens, MaxTokens: d.MaxTokens, Location: loc,
		SystemPrompt: builder.SystemPrompt, Logger: log,
	}
	if nb != nil {
		// Workers share the workspace volume: one memory writer at a time.
		memOpts.Lock = func(ctx context.Context) (func(), error) { return nb.Lock(ctx, "memory") }
	}
	mem, err := memory.New(memOpts)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	builder.Memory = mem
	loop := agent.NewLoop(agent.LoopConfig{
		Store:               store,
		Builder:             builder,
		Runner:              runner,
		Subagents:           subs,
		Consolidator:        mem,
		Out:                 dl.publisher(b),
		MaxConcurrentTurns:  d.MaxConcurrentTurns,
		MaxToolResultChars:  d.MaxToolResultChars,
		ContextWindowTokens: d.ContextWindowTokens,
		OnTurnDone: func(m bus.Inbound, err error) {
			outcome := "ok"
			switch {
			case errors.Is(err, context.Canceled) && shuttingDown.Load():
				in.Done(m, true, err) // replayed at the next start
				return
			case errors.Is(err, context.Canceled):
				outcome = "stopped"
			case err != nil:
				outcome = "error"
			}
			if !m.ReceivedAt.IsZero() {
				metrics.Turn(time.Since(m.ReceivedAt), outcome)
			}
			in.Done(m, false, err)
		},
		Log: log,
	})

	// Channels: the web chat is always there unless disabled.
	loopback := isLoopback(cfg.Gateway.Host)
	if o.Listener != nil {
		loopback = isLoopbackAddr(o.Listener.Addr())
	}
	webCfg := web.DefaultConfig()
	if err := cfg.Channels.Decode("web", &webCfg); err != nil {
		return err
	}
	var chans []channels.Channel
	var webCh *web.Channel
	if webCfg.Enabled && runsChannels {
		webCh, err = web.New(webCfg, web.Options{Loopback: loopback, TokenFile: filepath.Join(o.Paths.State, "web_token"), Log: log.With("channel", "web")})
		if err != nil {
			return err
		}
		chans = append(chans, webCh)
	}
	if o.Channels != nil && runsChannels {
		built, err := o.Channels.Build(cfg.Channels, channels.Deps{Log: log, Paths: o.Paths})
		if err != nil {
			return err
		}
		chans = append(chans, built...)
	}
	if runsChannels {
		chans = append(chans, o.Extra...)
	}

	gate := &channels.Gate{
		AllowFrom: allowLists(cfg, chans),
		Pairing:   channels.NewPairingStore(filepath.Join(o.Paths.State, "pairing.json")),
		Reply:     b.PublishOutbound,
		Log:       log.With("component", "access"),
		Next: channels.InboxFunc(func(ctx context.Context, m bus.Inbound) error {
			if m.ReceivedAt.IsZero() {
				m.ReceivedAt = time.Now()
			}
			err := dl.accept(ctx, in, m)
			if errors.Is(err, journal.ErrDuplicate) {
				metrics.Inbound(m.Channel, "duplicate")
				return nil
			}
			if err != nil {
				return err
			}
			metrics.Inbound(m.Channel, "accepted")
			return nil
		}),
	}
	counted := &countedGate{gate: gate, metrics: metrics}
	mgr := channels.NewManager(channels.ManagerConfig{Inbox: counted, Observer: metrics, Log: log}, chans)
	dcfg := channels.DispatcherConfig{
		SendProgress: cfg.Channels.SendProgress, SendToolHints: cfg.Channels.SendToolHints,
		MaxRetries: cfg.Channels.SendMaxRetries, Observer: metrics, Log: log,
	}
	if nb != nil {
		dcfg.Handled = nb.Delivered // acknowledged once the platform took it
	}
	dl.configure(&dcfg)
	disp := channels.NewDispatcher(dcfg, chans)

	// HTTP.
	status := func() Status {
		inQ, outQ := b.Depth()
		ready, _ := mgr.Ready()
		st := Status{Version: o.Version, Ready: ready, Channels: mgr.Health(), Inbound: inQ, Outbound: outQ, Pending: in.Pending(), PendingReplies: dl.pending(), Started: started}
		if o.MCP != nil {
			st.MCP = o.MCP.Status()
		}
		if nb != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			st.Cluster = clusterStatus(ctx, nb, role)
		}
		return st
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		ready, bad := mgr.Ready()
		if reason := dl.storageProblem(); reason != "" {
			ready, bad = false, append(bad, reason)
		}
		w.Header().Set("Content-Type", "text/plain")
		if !ready || shuttingDown.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			for _, s := range bad {
				_, _ = fmt.Fprintln(w, s)
			}
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /api/status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(status())
	})
	if cfg.Gateway.Pprof {
		mountPprof(mux)
		log.Info("profiles served at /debug/pprof/ to loopback clients (gateway.pprof)")
	}
	for _, c := range chans {
		if wh, ok := c.(interface {
			WebhookPath() string
			WebhookHandler() http.Handler
		}); ok && wh.WebhookPath() != "" {
			mux.Handle("POST "+wh.WebhookPath(), wh.WebhookHandler())
			log.Info("webhook mounted", "channel", c.Name(), "path", wh.WebhookPath())
		}
	}
	if webCh != nil {
		mux.Handle("/", webCh.Handler())
	}
	ln := o.Listener
	if ln == nil {
		addr := net.JoinHostPort(cfg.Gateway.Host, fmt.Sprint(cfg.Gateway.Port))
		ln, err = net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("gateway: listen on %s (gateway.host/gateway.port): %w", addr, err)
		}
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	// Start everything.
	var wg sync.WaitGroup
	chCtx, stopChannels := context.WithCancel(context.WithoutCancel(ctx))
	loopCtx, stopLoop := context.WithCancel(context.WithoutCancel(ctx))
	dispCtx, stopDisp := context.WithCancel(context.WithoutCancel(ctx))
	defer stopChannels()
	defer stopLoop()
	defer stopDisp()

	if nb == nil {
		wg.Go(func() { _ = disp.Run(dispCtx, b.Outbound()) })
		if err := dl.resume(ctx, b); err != nil {
			return err
		}
	}
	loopDone := make(chan struct{})
	if runsAgent {
		wg.Go(func() { releaseWhenIdle(loopCtx, loop.Idle, log) })
	}
	switch {
	case runsAgent && nb == nil:
		go func() { _ = loop.Run(loopCtx, b.Inbound()); close(loopDone) }()
	case runsAgent:
		// The worker hands messages to the loop under the partition fence
		// (see natsbus.WorkerHooks); the loop runs until the worker stopped
		// feeding it and its turns are over.
		runCtx, stopRun := context.WithCancel(context.WithoutCancel(loopCtx))
		defer stopRun()
		go func() { _ = loop.Run(runCtx, nil); close(loopDone) }()
		wg.Go(func() {
			_ = nb.RunWorkerWith(loopCtx, natsbus.WorkerHooks{
				Submit: func(m bus.Inbound) { loop.Submit(loopCtx, m) },
				Revoke: func(key string) { loop.StopSession(key) },
			})
			stopRun()
		})
	default:
		close(loopDone)
	}
	for _, m := range replay {
		log.Info("replaying unfinished message", "channel", m.Channel, "session", m.Key())
		if err := b.PublishInbound(ctx, m); err != nil {
			return err
		}
	}
	switch {
	case nb == nil:
		wg.Go(func() { _ = mgr.Run(chCtx) })
	case runsChannels:
		// One active channels instance per bot: platform connections like
		// Telegram polling allow one consumer. Others wait as hot standbys.
		wg.Go(func() {
			nb.Hold(chCtx, RoleChannels, func(ctx context.Context) {
				var cw sync.WaitGroup
				cw.Go(func() { _ = mgr.Run(ctx) })
				cw.Go(func() { _ = nb.RunDispatcherFeed(ctx) })
				cw.Go(func() { _ = disp.Run(ctx, nb.Outbound()) })
				cw.Wait()
			})
		})
	}
	if nb != nil && !runsAgent {
		wg.Go(func() { nb.Announce(chCtx) })
	}
	wg.Go(func() { subs.Wait(loopCtx) })

	background := func(ctx context.Context) {
		var bw sync.WaitGroup
		bw.Go(func() { _ = cron.New(cronStore, b.PublishInbound, log).Run(ctx) })
		if cfg.Gateway.Heartbeat.Enabled {
			hb := heartbeat.New(heartbeat.Config{
				Workspace: o.Paths.Workspace, Interval: time.Duration(cfg.Gateway.Heartbeat.IntervalS) * time.Second,
				Provider: o.Provider, Model: o.Model, Publish: b.PublishInbound, Target: loop.LastActive,
				Log: log, OnDecision: metrics.Heartbeat,
			})
			bw.Go(func() { _ = hb.Run(ctx) })
		}
		bw.Wait()
	}
	switch {
	case nb == nil:
		wg.Go(func() { background(chCtx) })
	case runsAgent:
		// Cron and heartbeat run on exactly one instance.
		wg.Go(func() { nb.Hold(chCtx, "cron", background) })
	}
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(ln) }()

	addr := ln.Addr().String()
	log.Info("gateway ready", "addr", "http://"+addr, "channels", len(chans), "workspace", o.Paths.Workspace)
	if webCh != nil {
		if tok := webCh.Token(); tok != "" {
			log.Info("web chat needs its access token (stored in "+filepath.Join(o.Paths.State, "web_token")+")", "url", "http://"+addr+"/")
			w := o.Stderr
			if w == nil {
				w = os.Stderr
			}
			fmt.Fprintf(w, "web chat: http://%s/  (access token: %s)\n", addr, tok)
		} else {
			log.Info("web chat open", "url", "http://"+addr+"/")
		}
	}
	if o.Ready != nil {
		o.Ready(addr)
	}

	var runErr error
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case err := <-srvErr:
			runErr = fmt.Errorf("gateway: http server: %w", err)
			break wait
		case <-o.Reload:
			if o.ReloadConfig == nil {
				continue
			}
			next, err := o.ReloadConfig()
			if err != nil {
				log.Error("reload failed; keeping the running config", "err", err)
				continue
			}
			gate.SetAllowFrom(allowLists(next, chans))
			log.Info("config reloaded: allow-lists updated; other changes take effect after a restart")
		}
	}

	// Shutdown: intake first, then turns, then delivery.
	log.Info("gateway stopping")
	shuttingDown.Store(true)
	stopChannels()
	deadline := time.Now().Add(o.DrainTimeout)
	for !loop.Idle() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	stopLoop()
	<-loopDone
	b.Close()
	flushed := make(chan struct{})
	go func() { wg.Wait(); close(flushed) }()
	select {
	case <-flushed:
	case <-time.After(10 * time.Second):
		stopDisp()
		<-flushed
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutCtx)
	log.Info("gateway stopped")
	return runErr
}

// allowLists collects each channel's allowFrom.
func allowLists(cfg *configs.Config, chans []channels.Channel) map[string][]string {
	webCfg := web.DefaultConfig()
	_ = cfg.Channels.Decode("web", &webCfg)
	allow := map[string][]string{"web": webCfg.AllowFrom}
	for _, name := range cfg.Channels.Names() {
		if name != "web" {
			allow[name] = cfg.Channels.Common(name).AllowFrom
		}
	}
	for _, c := range chans {
		if _, ok := allow[c.Name()]; !ok {
			allow[c.Name()] = cfg.Channels.Common(c.Name()).AllowFrom
		}
	}
	return allow
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

// countedGate counts the messages the gate denies.
type countedGate struct {
	gate    *channels.Gate
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
