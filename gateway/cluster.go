package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/cron"
	"github.com/nanobot-go/nanobot/gateway/journal"
	"github.com/nanobot-go/nanobot/gateway/natsbus"
)

// Roles of a gateway process (configs.ClusterConfig.Role).
const (
	RoleAll      = "all"
	RoleChannels = "channels"
	RoleWorker   = "worker"
)

// queues is the bus the gateway runs on: the in-memory bus (default) or
// the JetStream bus (cluster mode).
type queues interface {
	PublishInbound(ctx context.Context, m bus.Inbound) error
	PublishOutbound(ctx context.Context, m bus.Outbound) error
	Inbound() <-chan bus.Inbound
	Outbound() <-chan bus.Outbound
	Depth() (in, out int)
	Close()
}

// inbox is where accepted inbound messages go and how they are marked
// done: the journal and the in-memory bus, or JetStream.
type inbox interface {
	// Accept makes m durable and queues it; journal.ErrDuplicate for a
	// message seen before.
	Accept(ctx context.Context, m bus.Inbound) error
	// Done marks m finished, or (stopping, or its turn failed in a way
	// worth replaying) hands it back.
	Done(m bus.Inbound, stopping bool, err error)
	Pending() int
}

type journalInbox struct {
	jr  *journal.Journal
	b   *bus.Bus
	log *slog.Logger
}

func (j journalInbox) Accept(ctx context.Context, m bus.Inbound) error {
	jm, err := j.jr.Add(m)
	if err != nil {
		return err
	}
	return j.b.PublishInbound(ctx, jm)
}

func (j journalInbox) Done(m bus.Inbound, stopping bool, _ error) {
	if stopping || m.ID == "" {
		return // replayed at the next start
	}
	if err := j.jr.Done(m.ID); err != nil {
		j.log.Error("journal: marking done failed", "err", err)
	}
}

func (j journalInbox) Pending() int { return j.jr.Pending() }

// Accept implements inbox: the JetStream stream is the durable inbox.
func (c *clusterBackend) Accept(ctx context.Context, m bus.Inbound) error {
	return c.PublishInbound(ctx, m)
}

// Done implements inbox. A turn that could not be saved because NATS was
// unreachable is replayed rather than acknowledged.
func (c *clusterBackend) Done(m bus.Inbound, stopping bool, err error) {
	c.Bus.Done(m, stopping || natsbus.IsUnreachable(err))
}

// Pending implements inbox.
func (c *clusterBackend) Pending() int { in, _ := c.Depth(); return in }

// cluster runs this process's role of a bot spread over several
// processes on NATS JetStream (docs/cluster.md).
type clusterBackend struct {
	*natsbus.Bus
	nc    *nats.Conn
	role  string
	store session.Store
	cron  *cron.Store
}

func openCluster(ctx context.Context, o Options, role string, jobs *cron.Store) (_ *clusterBackend, err error) {
	cl := o.Config.Cluster
	nc, err := connectNATS(cl.NATS, "nanobot "+role, o.Log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			nc.Close()
		}
	}()
	var nb *natsbus.Bus
	// NATS may still be starting (compose, Kubernetes): retry a while,
	// saying so, and name NATS's own complaint (a refused token) if the
	// wait ends in vain.
	if !nc.IsConnected() {
		o.Log.Info("waiting for NATS", "servers", strings.Join(serversOf(nc), ", "), "for", natsbus.MaxRetry)
	}
	err = natsbus.Retry(ctx, func(ctx context.Context) (err error) {
		nb, err = natsbus.Open(ctx, nc, natsbus.Options{
			Prefix: cl.Prefix, Partitions: cl.Partitions, LeaseTTL: time.Duration(cl.LeaseTTLS) * time.Second,
			AckWait: time.Duration(cl.AckWaitS) * time.Second, Instance: o.Instance, Role: role, Log: o.Log,
		})
		return err
	})
	if err != nil {
		if last := nc.LastError(); last != nil {
			return nil, fmt.Errorf("cluster.nats (%s): %w; NATS said: %v", strings.Join(serversOf(nc), ", "), err, last)
		}
		if !nc.IsConnected() {
			return nil, fmt.Errorf("cluster.nats: no server answered at %s: %w", strings.Join(serversOf(nc), ", "), err)
		}
		return nil, err
	}
	c := &clusterBackend{Bus: nb, nc: nc, role: role, cron: jobs}
	if c.store, err = session.NewKVStore(ctx, nb.JetStream(), session.KVStoreOptions{
		Bucket: strings.ToUpper(cl.Prefix) + "_SESSIONS", Logger: o.Log,
	}); err != nil {
		nb.Close()
		return nil, err
	}
	// Cron jobs live in NATS too, so every worker's cron tool and the
	// instance running the scheduler share them.
	if err := moveCronToKV(ctx, nb, jobs, o.Log); err != nil {
		nb.Close()
		return nil, err
	}
	o.Log.Info("cluster mode", "nats", natsServer(nc), "partitions", cl.Partitions, "role", role, "instance", nb.Options().Instance)
	return c, nil
}

func (c *clusterBackend) runsAgent() bool    { return c.role != RoleChannels }
func (c *clusterBackend) runsChannels() bool { return c.role != RoleWorker }

func (c *clusterBackend) sessions() session.Store           { return c.store }
func (c *clusterBackend) cronStore() *cron.Store            { return c.cron }
func (c *clusterBackend) admission() func(bus.Inbound) bool { return c.Bus.Admit }
func (c *clusterBackend) memoryLock() func(ctx context.Context) (context.Context, func(), error) {
	// Workers share the workspace volume: one memory writer at a time.
	return func(ctx context.Context) (context.Context, func(), error) { return c.Lock(ctx, "memory") }
}
func (c *clusterBackend) status(ctx context.Context) *ClusterStatus {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return clusterStatus(ctx, c.Bus, c.role)
}
func (c *clusterBackend) close()                        { c.Bus.Close(); c.nc.Close() }
func (c *clusterBackend) journal() *journal.Journal     { return nil }
func (c *clusterBackend) delivered() func(bus.Outbound) { return c.Delivered }
func (c *clusterBackend) instance() string              { return c.Options().Instance }

// unready is NATS out of reach: this node's queues, sessions and leases
// all live there.
func (c *clusterBackend) unready() string {
	if c.nc.IsConnected() {
		return ""
	}
	return "nats: not connected (reconnecting to " + strings.Join(serversOf(c.nc), ", ") + ")"
}

// serversOf lists nc's servers without credentials.
func serversOf(nc *nats.Conn) []string {
	servers := nc.Servers()
	for i, s := range servers {
		servers[i] = withoutUser(s)
	}
	return servers
}

func (c *clusterBackend) observe(reg *prometheus.Registry, log *slog.Logger) *slog.Logger {
	registerClusterMetrics(reg, c.Bus, c.role)
	return log.With("role", c.role, "instance", c.instance())
}

// agentSessions is the shared store: every worker serves every profile.
func (c *clusterBackend) agentSessions(string, *slog.Logger) (session.Store, error) {
	return c.store, nil
}

func (c *clusterBackend) services(g *Gateway) []service {
	var svcs []service
	if c.runsAgent() {
		// The worker hands messages to the loop under the partition fence
		// (natsbus.WorkerHooks); the loop runs until the worker stopped
		// feeding it and its turns are over.
		svcs = append(svcs, g.agentService(func(ctx context.Context) error {
			runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
			loopDone := make(chan struct{})
			go func() { _ = g.runAgents(runCtx, nil); close(loopDone) }()
			err := c.RunWorkerWith(ctx, natsbus.WorkerHooks{
				Submit: func(m bus.Inbound) { g.submit(ctx, m) },
				Revoke: g.stopSession,
			})
			stopRun()
			<-loopDone
			return err
		}))
	}
	if c.runsChannels() {
		// One active channels instance per bot: platform connections like
		// Telegram polling allow one consumer. Others wait as hot standbys.
		svcs = append(svcs, service{name: "channels", run: func(ctx context.Context) error {
			c.Hold(ctx, RoleChannels, func(ctx context.Context) {
				var wg sync.WaitGroup
				wg.Go(func() { _ = g.runChannels(ctx) })
				wg.Go(func() { _ = c.RunDispatcherFeed(ctx) })
				wg.Go(func() { _ = g.disp.Run(ctx, c.Outbound()) })
				wg.Wait()
			})
			return nil
		}})
	}
	if c.runsAgent() {
		// Cron and heartbeat run on exactly one instance.
		svcs = append(svcs, service{name: "background", run: func(ctx context.Context) error {
			c.Hold(ctx, "cron", func(ctx context.Context) { _ = g.background(ctx) })
			return nil
		}})
	} else {
		svcs = append(svcs, service{name: "announce", run: func(ctx context.Context) error { c.Announce(ctx); return nil }})
	}
	return svcs
}

// connectNATS dials the cluster's NATS server. The client reconnects by
// itself, forever, with jittered waits; disconnects are logged (without
// credentials). While it reconnects the client buffers what is published
// (acknowledgements and lease updates rely on that); inbound messages are
// kept out of that buffer by natsbus.PublishInbound.
func connectNATS(c configs.NATSConfig, name string, log *slog.Logger) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(time.Second),
		nats.ReconnectJitter(500*time.Millisecond, 2*time.Second), nats.RetryOnFailedConnect(true),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if err == nil && nc.IsClosed() {
				return // closed on purpose
			}
			log.Warn("nats: disconnected; reconnecting", "err", err)
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Warn("nats: asynchronous error", "subject", subject, "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("nats: reconnected", "server", natsServer(nc)) }),
	}
	switch {
	case c.Token != "":
		opts = append(opts, nats.Token(c.Token))
	case c.Credentials != "":
		opts = append(opts, nats.UserCredentials(c.Credentials))
	case c.NKey != "":
		o, err := nats.NkeyOptionFromSeed(c.NKey)
		if err != nil {
			return nil, fmt.Errorf("cluster.nats.nkey: %w", err)
		}
		opts = append(opts, o)
	}
	if c.TLS.CA != "" {
		opts = append(opts, nats.RootCAs(c.TLS.CA))
	}
	if c.TLS.Cert != "" {
		opts = append(opts, nats.ClientCert(c.TLS.Cert, c.TLS.Key))
	}
	nc, err := nats.Connect(c.URL, opts...)
	if err != nil {
		// The error names the server, never the token.
		return nil, fmt.Errorf("cluster.nats: connect: %w", err)
	}
	return nc, nil
}

// natsServer is the server nc is connected to, for logs: the address
// without any user, password or token in it ("nats://TOKEN@host" names
// the token as the user, which the client's own redaction keeps).
func natsServer(nc *nats.Conn) string { return withoutUser(nc.ConnectedUrl()) }

// withoutUser is address without its userinfo.
func withoutUser(address string) string {
	u, err := url.Parse(address)
	if err != nil {
		return "(unparsable address)"
	}
	u.User = nil
	return u.String()
}

// moveCronToKV puts the cron jobs in the cluster's <PREFIX>_CRON bucket
// (jobs already in the local jobs.json are copied there the first time).
func moveCronToKV(ctx context.Context, nb *natsbus.Bus, store *cron.Store, log *slog.Logger) error {
	o := nb.Options()
	kv, err := natsbus.EnsureKeyValue(ctx, nb.JetStream(), jetstream.KeyValueConfig{
		Bucket: strings.ToUpper(o.Prefix) + "_CRON", History: 1, Storage: jetstream.FileStorage, Replicas: o.Replicas,
	})
	if err != nil {
		return fmt.Errorf("cron bucket: %w", err)
	}
	return store.MoveToKV(ctx, kv, log)
}

// CronStore opens the cluster's cron jobs for a command-line tool
// (`nanobot cron` in cluster mode), copying the jobs of the local file
// (jobsFile, the instance's cron/jobs.json) there first while the bucket
// is empty, as the first gateway in cluster mode does: a job added here
// before any gateway ran in cluster mode must not leave the local ones
// behind. close disconnects.
func CronStore(ctx context.Context, cfg configs.ClusterConfig, jobsFile string, log *slog.Logger) (store *cron.Store, close func(), err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	nc, err := connectNATS(cfg.NATS, "nanobot cron", log)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("cluster.nats: %w", err)
	}
	kv, err := natsbus.EnsureKeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket: strings.ToUpper(cfg.Prefix) + "_CRON", History: 1, Storage: jetstream.FileStorage,
	})
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("cron bucket: %w", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	store = cron.NewStore(jobsFile)
	if err := store.MoveToKV(wctx, kv, log); err != nil {
		cancel()
		nc.Close()
		return nil, nil, err
	}
	return store, func() { cancel(); nc.Close() }, nil
}

// ClusterStatus is the cluster part of Status.
type ClusterStatus struct {
	Role     string `json:"role"`
	Instance string `json:"instance"`
	// Owned are the inbound partitions this instance works on.
	Owned []int `json:"partitionsOwned"`
	// Channels is true on the instance running the chat adapters.
	Channels bool `json:"channelsActive"`
	// Members are the instances seen in the last lease period.
	Members []natsbus.Member `json:"members"`
	// Lag is the number of inbound messages not yet answered, all
	// instances together.
	Lag int `json:"lag"`
}

func clusterStatus(ctx context.Context, nb *natsbus.Bus, role string) *ClusterStatus {
	in, _ := nb.Depth()
	st := &ClusterStatus{Role: role, Instance: nb.Options().Instance, Owned: nb.Owned(), Channels: nb.Holds(RoleChannels), Lag: in}
	if members, err := nb.Members(ctx); err == nil {
		st.Members = members
	}
	return st
}

// registerClusterMetrics adds the cluster gauges, labelled with the role
// and instance so one dashboard shows every instance.
func registerClusterMetrics(r *prometheus.Registry, nb *natsbus.Bus, role string) {
	labels := prometheus.Labels{"role": role, "instance": nb.Options().Instance}
	r.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nanobot_cluster_partitions_owned", Help: "Inbound partitions this instance works on.", ConstLabels: labels},
			func() float64 { return float64(len(nb.Owned())) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nanobot_cluster_channels_active", Help: "1 on the instance running the chat adapters (holding the channels lease).", ConstLabels: labels},
			func() float64 { return boolGauge(nb.Holds(RoleChannels)) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "nanobot_cluster_channels_standby_attempts_total", Help: "Attempts to take the channels lease that found another instance holding it (a live standby counts up).", ConstLabels: labels},
			func() float64 { return float64(nb.StandbyAttempts(RoleChannels)) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nanobot_cluster_cron_active", Help: "1 on the instance running cron and heartbeat.", ConstLabels: labels},
			func() float64 { return boolGauge(nb.Holds("cron")) }),
	)
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
