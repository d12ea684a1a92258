package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/tools/goals"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/webui"
)

// mountWebUI serves the web workbench at / (its API under /api/) on this
// process's HTTP server. Beyond loopback it needs gateway.webui.password:
// without it the workbench answers 403 and says why (the gateway itself
// keeps running: its webhooks and channels need no workbench).
func (g *Gateway) mountWebUI(mux *http.ServeMux) error {
	if !g.runsChannels() {
		return nil // a worker serves health and metrics only
	}
	o := webui.Options{
		PasswordHash: g.cfg.Gateway.WebUI.Password, Loopback: g.loopback(), Owner: g.owner,
		Sessions: g.be.sessions(), Health: g.mgr.Health, Pairing: g.gate.Pairing, Approvals: g.o.Approvals,
		Goals: goals.NewStore(agent.GoalsFile(g.o.Paths)), SkillInstaller: g.o.SkillInstaller,
		Cron: g.be.cronStore(), Workspace: g.o.Paths.Workspace, Heartbeat: g.cfg.Gateway.Heartbeat,
		MemoryLock: g.be.memoryLock(),
		ConfigFile: g.o.Paths.ConfigFile, Platforms: g.o.Platforms, Logs: g.o.Logs,
		Setup: g.o.Setup, ProviderSettings: g.o.ProviderSettings,
		UsageDir: UsageDir(g.o.Paths), UsageLocation: g.cfg.Agents.Defaults.Location(),
		Apply: func(next *configs.Config) { g.apply("the workbench", next) }, // what a reload applies
		RestartNeeded: func() []string {
			if st := g.reloads.status(); st != nil {
				return st.Restart
			}
			return nil
		},
		Log: g.log.With("component", "webui"),
	}
	if g.agent != nil {
		o.Reset = func(ctx context.Context, key string) error {
			err := g.agent.Reset(ctx, key)
			if errors.Is(err, agent.ErrSessionBusy) {
				return fmt.Errorf("%w: %w", webui.ErrBusy, err)
			}
			return err
		}
	}
	w, err := webui.New(o)
	if err != nil {
		return fmt.Errorf("gateway: %w", err)
	}
	if off := w.Off(); off != nil {
		g.log.Warn(off.Error())
	} else {
		g.signIn = true
	}
	w.Mount(mux)
	// A browser signed in to the workbench may also chat (the web chat's
	// WebSocket would otherwise want the token beyond loopback).
	for _, c := range g.chans {
		if l, ok := c.(loginAware); ok {
			l.SetLogin(w.SignedIn)
		}
	}
	return nil
}

// loginAware is a channel that admits browsers signed in to the workbench
// (the web chat).
type loginAware interface {
	SetLogin(loggedIn func(r *http.Request) bool)
}
