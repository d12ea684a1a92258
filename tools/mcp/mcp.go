// Package mcp connects the agent to Model Context Protocol servers
// (tools.mcpServers in config.json) with the official Go SDK, over stdio,
// SSE or streamable HTTP, and offers each server's tools to the model as
// mcp_<server>_<tool>.
//
// A Manager owns one supervisor goroutine per server for the life of the
// process: it connects, lists the tools, registers them in the tools
// Registry, then waits for the connection to end (a stdio server that
// exits, an HTTP session that is lost) and reconnects with exponential
// backoff and jitter. A server that cannot be reached is logged, shown by
// Status (and so by `nanobot status`), and retried; the agent runs on
// without its tools meanwhile. A call made while its server reconnects
// waits for it, within the call's timeout.
//
// Stdio servers are started through tools/sandbox like every other child
// process, with a filtered environment (plus the entry's env) and their
// stderr copied to the log line by line. Results from HTTP servers are
// wrapped as external content, since they come from another machine.
//
// All methods are safe for concurrent use.
package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/sandbox"
)

// Registrar is where discovered tools go (a *tools.Registry).
type Registrar interface {
	Register(t tools.Tool) error
	Unregister(name string) bool
}

// Options configure a Manager.
type Options struct {
	// Log receives connection events and the servers' stderr.
	Log *slog.Logger
	// Dir is the working folder of stdio servers without a cwd (the
	// workspace).
	Dir string
	// Sandbox is the confinement of stdio servers (tools.exec.sandbox).
	Sandbox sandbox.Mode
	// Writable and Readable are folders a confined stdio server may write,
	// or read, besides what it needs to run (see serverPaths).
	Writable, Readable []string
	// DenyNetwork, AllowUnixSockets and Limits are as for exec (a
	// server's allowUnixSockets overrides AllowUnixSockets).
	DenyNetwork      bool
	AllowUnixSockets bool
	Limits           sandbox.Limits
	// BackoffMin and BackoffMax bound the reconnect delay (1 s and 1 min
	// when zero).
	BackoffMin, BackoffMax time.Duration
	// ConnectTimeout bounds one connection attempt (30 s when zero).
	ConnectTimeout time.Duration
	// OAuth holds the sign-ins of servers with auth "oauth" (see
	// oauth.go); nil: such servers fail with the command to sign in.
	OAuth TokenStore
	// AddSecret, when set, is given every OAuth token as it is loaded or
	// renewed, before it is used (the log redactor's Add).
	AddSecret func(secrets ...string)
	// Redact, when set, cleans a connection error before Status shows it
	// (an error names the server's URL, which may carry its key; the
	// process's redactor knows the config's secrets).
	Redact func(string) string
}

// State of a server connection.
type State string

const (
	StateConnecting State = "connecting"
	StateConnected  State = "connected"
	StateFailed     State = "failed" // the last attempt failed; retrying
	StateStopped    State = "stopped"
)

// Status is one server's connection state, for status displays.
type Status struct {
	Name      string    `json:"name"`
	Transport string    `json:"transport"`
	State     State     `json:"state"`
	Tools     int       `json:"tools"`
	LastError string    `json:"lastError,omitempty"`
	Since     time.Time `json:"since"`
	Restarts  int       `json:"restarts"`
}

// Manager supervises the configured servers.
type Manager struct {
	opts    Options
	log     *slog.Logger
	reg     Registrar
	servers []*server

	mu     sync.Mutex
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New prepares a Manager for the configured servers; nothing connects
// until Start. Entries are validated at config load.
func New(cfg map[string]configs.MCPServerConfig, reg Registrar, opts Options) *Manager {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.BackoffMin <= 0 {
		opts.BackoffMin = time.Second
	}
	if opts.BackoffMax <= 0 {
		opts.BackoffMax = time.Minute
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 30 * time.Second
	}
	m := &Manager{opts: opts, log: opts.Log.With("component", "mcp"), reg: reg}
	names := make([]string, 0, len(cfg))
	for name := range cfg {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		m.servers = append(m.servers, newServer(m, name, cfg[name]))
	}
	return m
}

// Start connects every server in the background and waits until each has
// connected once or failed once, at most wait, so the first turn already
// sees the tools of servers that start quickly. Servers keep reconnecting
// until Close.
func (m *Manager) Start(ctx context.Context, wait time.Duration) {
	m.mu.Lock()
	if m.cancel != nil {
		m.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.cancel = cancel
	m.mu.Unlock()
	for _, s := range m.servers {
		m.wg.Go(func() { s.supervise(ctx) })
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for _, s := range m.servers {
		select {
		case <-s.firstTry:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// Close disconnects every server (stdio servers are stopped) and removes
// their tools.
func (m *Manager) Close() {
	m.mu.Lock()
	cancel := m.cancel
	m.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	m.wg.Wait()
}

// Status reports every server, sorted by name.
func (m *Manager) Status() []Status {
	out := make([]Status, 0, len(m.servers))
	for _, s := range m.servers {
		out = append(out, s.status())
	}
	return out
}

// String summarises the servers for logs ("2/3 connected").
func (m *Manager) String() string {
	up := 0
	for _, s := range m.servers {
		if s.status().State == StateConnected {
			up++
		}
	}
	return fmt.Sprintf("%d/%d connected", up, len(m.servers))
}
