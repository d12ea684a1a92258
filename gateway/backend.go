package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/gateway/cron"
	"github.com/nanobot-go/nanobot/gateway/journal"
	"github.com/prometheus/client_golang/prometheus"
)

// backend is what differs between one process on local files (the
// default) and a cluster on NATS JetStream: the queues, where accepted
// messages are kept, the stores, and which services this process runs.
type backend interface {
	queues
	inbox
	sessions() session.Store
	cronStore() *cron.Store
	// memoryLock serialises memory writers sharing a workspace (nil: none
	// needed). Writers work under held, which ends when the lock is lost.
	memoryLock() func(ctx context.Context) (held context.Context, release func(), err error)
	// admission is the agent loop's Admit (nil: every message runs when
	// its turn comes).
	admission() func(m bus.Inbound) bool
	// services lists, in start order, what this process runs of g.
	services(g *Gateway) []service
	// status is the cluster part of Status (nil for local).
	status(ctx context.Context) *ClusterStatus
	// runsAgent and runsChannels say which halves this process runs (both,
	// unless it is one role of a cluster).
	runsAgent() bool
	runsChannels() bool
	// agentSessions is the session store of an agent profile whose
	// sessions live in dir (a folder of its own locally, the shared store
	// in a cluster).
	agentSessions(dir string, log *slog.Logger) (session.Store, error)
	// journal is the inbox journal (nil when the inbox is elsewhere).
	journal() *journal.Journal
	// delivered is told each outbound message the dispatcher is done with
	// (nil: nothing to acknowledge).
	delivered() func(bus.Outbound)
	// instance names this process among its cluster's ("" alone).
	instance() string
	// unready says why the backend cannot take or hand out messages now
	// ("" when it can): /readyz lists it.
	unready() string
	// observe registers the backend's metrics and returns log with its
	// identity (role, instance) attached.
	observe(reg *prometheus.Registry, log *slog.Logger) *slog.Logger
	close()
}

// local runs everything in one process: in-memory queues, the inbox
// journal, sessions and cron jobs in files.
type local struct {
	*bus.Bus
	journalInbox
	store  session.Store
	cron   *cron.Store
	replay []bus.Inbound
}

func openLocal(o Options, jobs *cron.Store) (*local, error) {
	jr, pending, err := journal.Open(filepath.Join(o.Paths.State, "inbox.jsonl"), journal.Options{Log: o.Log, Open: o.StorageOpen})
	if err != nil {
		return nil, err
	}
	store, err := session.NewFileStore(o.Paths.Sessions, session.FileStoreOptions{Logger: o.Log})
	if err != nil {
		_ = jr.Close()
		return nil, err
	}
	mem := bus.New(0, 0)
	return &local{Bus: mem, journalInbox: journalInbox{jr: jr, b: mem, log: o.Log}, store: store, cron: jobs, replay: pending}, nil
}

func (l *local) sessions() session.Store               { return l.store }
func (l *local) cronStore() *cron.Store                { return l.cron }
func (l *local) admission() func(bus.Inbound) bool     { return nil }
func (l *local) status(context.Context) *ClusterStatus { return nil }
func (l *local) close()                                { l.Close(); _ = l.jr.Close() }
func (l *local) runsAgent() bool                       { return true }
func (l *local) runsChannels() bool                    { return true }
func (l *local) journal() *journal.Journal             { return l.jr }
func (l *local) delivered() func(bus.Outbound)         { return nil }
func (l *local) instance() string                      { return "" }
func (l *local) unready() string                       { return "" } // the journal's own problems are the delivery's

func (l *local) observe(_ *prometheus.Registry, log *slog.Logger) *slog.Logger { return log }

// agentSessions is a folder of session files of the profile's own.
func (l *local) agentSessions(dir string, log *slog.Logger) (session.Store, error) {
	return session.NewFileStore(dir, session.FileStoreOptions{Logger: log})
}

// memoryLock is nil: the process is the only writer of its workspace, and
// the consolidator's own lock serialises its writers.
func (l *local) memoryLock() func(ctx context.Context) (context.Context, func(), error) { return nil }

// flushTimeout bounds how long delivery may take to send what the agent
// said before shutdown.
const flushTimeout = 10 * time.Second

func (l *local) services(g *Gateway) []service {
	flushed := make(chan struct{})
	return []service{
		{name: "delivery", run: func(ctx context.Context) error {
			defer close(flushed)
			return g.disp.Run(ctx, l.Outbound())
		}, drain: func() {
			// Nothing more is said once the agent stopped: close the queues
			// and let the dispatcher send what is left.
			l.Close()
			select {
			case <-flushed:
			case <-time.After(flushTimeout):
			}
		}},
		// Replies a previous run left undelivered go first, so each chat
		// gets them in order.
		{name: "resume replies", start: func(ctx context.Context) error { return g.dl.resume(ctx, l) }},
		g.agentService(func(ctx context.Context) error { return g.runAgents(ctx, l.Inbound()) }),
		{name: "replay", start: func(ctx context.Context) error {
			for _, m := range l.replay {
				if m.Source == bus.SourceAPI {
					// Its HTTP client is gone with the process that served
					// it: nobody would read the answer.
					g.log.Info("unfinished API request dropped at restart", "session", m.Key())
					l.Done(m, false, nil)
					continue
				}
				g.log.Info("replaying unfinished message", "channel", m.Channel, "session", m.Key())
				m.Replayed = true
				if err := l.PublishInbound(ctx, m); err != nil {
					return fmt.Errorf("replay: %w", err)
				}
			}
			return nil
		}},
		{name: "channels", run: g.runChannels},
		{name: "background", run: g.background},
	}
}
