package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/cron"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
	crontool "github.com/nanobot-go/nanobot/tools/cron"
	"github.com/nanobot-go/nanobot/tools/mcp"
	"github.com/nanobot-go/nanobot/tools/sandbox"
	"github.com/nanobot-go/nanobot/tools/shell"
)

// mcpStartWait is how long startup waits for MCP servers to connect.
const mcpStartWait = 15 * time.Second

// wired is everything cmd builds from the config for the agent: the
// provider, the tools and the channel registry.
type wired struct {
	provider providers.Provider
	model    string
	// providerName is the provider's config name (usage ledger, prices).
	providerName string
	// providerNote says how the provider was chosen (for status and logs).
	providerNote string
	tools        *tools.Registry
	channels     *channels.Registry
	// cron is the jobs store the cron tool uses; the gateway schedules from
	// it (and moves it to NATS in cluster mode).
	cron *cron.Store
	// mcp supervises the MCP servers (nil when none are configured).
	mcp *mcp.Manager
	// sessions holds the exec sessions of every agent's exec tool (nil
	// when they are off).
	sessions *shell.Sessions
	closers  []func()
}

func (w *wired) close() {
	for i := len(w.closers) - 1; i >= 0; i-- {
		w.closers[i]()
	}
}

// wire builds the provider, the tool registry and the channel registry.
func (a *app) wire(ctx context.Context) (*wired, error) {
	c := &a.loaded.Config
	w := &wired{channels: newChannelRegistry()}
	p, model, name, note, err := buildProvider(c, a.log, a.signIn())
	if err != nil {
		return nil, err
	}
	w.provider, w.model, w.providerName, w.providerNote = p, model, name, note

	w.cron = cron.NewStore(filepath.Join(a.loaded.Paths.Cron, "jobs.json"))
	if a.browser, err = a.newBrowser(); err != nil {
		return nil, fmt.Errorf("tools.browser: %w", err)
	}
	if a.browser != nil {
		w.closers = append(w.closers, a.browser.Close)
	}
	w.startSessions(ctx, a)
	if w.tools, err = a.toolRegistry(w.cron, w.sessions, a.loaded.Paths.Workspace, c.Tools.Exec.Sandbox); err != nil {
		w.close()
		return nil, err
	}
	if len(c.Tools.MCPServers) > 0 {
		ws := a.loaded.Paths.Workspace
		w.mcp = mcp.New(c.Tools.MCPServers, w.tools, mcp.Options{
			Log: a.log, Dir: ws, Sandbox: sandbox.Mode(c.Tools.Exec.Sandbox),
			Writable: append([]string{ws}, expandAll(c.Tools.Exec.AllowPaths.ReadWrite)...), Readable: expandAll(c.Tools.Exec.AllowPaths.ReadOnly),
			DenyNetwork: !c.Tools.Exec.NetworkAllowed(), AllowUnixSockets: c.Tools.Exec.AllowUnixSockets, Limits: execLimits(c.Tools.Exec.Limits),
			OAuth: a.mcpTokenStore(), AddSecret: a.redact.Add, Redact: a.redact.String,
		})
		// Servers that start quickly are ready for the first message; slow
		// ones add their tools when they connect.
		w.mcp.Start(ctx, mcpStartWait)
		w.closers = append(w.closers, w.mcp.Close)
		a.log.Info("mcp servers started", "servers", w.mcp.String())
	}
	return w, nil
}

// toolRegistry builds a registry of the built-in tools (cron and the
// configurable ones) working in workspace ws, exec confined by sb and
// starting its sessions in sessions (nil: none).
func (a *app) toolRegistry(jobs *cron.Store, sessions *shell.Sessions, ws, sb string) (*tools.Registry, error) {
	c := &a.loaded.Config
	disabled := map[string]bool{}
	for _, n := range tools.WithFamily(c.Tools.Disabled) {
		disabled[n] = true
	}
	reg := tools.NewRegistry(tools.WithLogger(a.log), tools.WithDisabled(disabled), tools.WithRedactor(a.redact))
	builtins := []tools.Tool{crontool.NewTool(jobs.ForTool(), c.Agents.Defaults.Location())}
	more, err := builtinToolsIn(a, ws, sb, sessions)
	if err != nil {
		return nil, err
	}
	for _, t := range append(builtins, more...) {
		if err := reg.RegisterOwn(t); err != nil {
			return nil, fmt.Errorf("tools: %w", err)
		}
	}
	return reg, nil
}

// agentTools builds the tools of an agent besides the default: its own
// workspace and sandbox (MCP servers serve the default agent only); the
// exec sessions are the gateway's, shared.
func (a *app) agentTools(jobs *cron.Store, sessions *shell.Sessions) func(configs.Agent, configs.Paths) (*tools.Registry, error) {
	return func(ag configs.Agent, p configs.Paths) (*tools.Registry, error) {
		sb := ag.Sandbox
		if sb == "" {
			sb = a.loaded.Config.Tools.Exec.Sandbox
		}
		return a.toolRegistry(jobs, sessions, p.Workspace, sb)
	}
}

func must(err error) {
	if err != nil {
		panic(err) // a duplicate registration is a programming error
	}
}
