package main

import (
	"context"
	"fmt"
	"time"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/fs"
	"github.com/nanobot-go/nanobot/tools/sandbox"
	"github.com/nanobot-go/nanobot/tools/shell"
	"github.com/nanobot-go/nanobot/tools/web"
)

// builtinTools builds the configurable built-in tools: exec, the file tools,
// browser, web_search and web_fetch.
func builtinTools(a *app) ([]tools.Tool, error) {
	return builtinToolsIn(a, a.loaded.Paths.Workspace, a.loaded.Config.Tools.Exec.Sandbox, nil)
}

// builtinToolsIn builds the built-in tools working in workspace ws, with
// exec confined by sandbox mode sb; with sessions (nil: none), exec starts
// long-running sessions there and write_stdin and list_exec_sessions join.
func builtinToolsIn(a *app, ws, sb string, sessions *shell.Sessions) ([]tools.Tool, error) {
	c := &a.loaded.Config
	var out []tools.Tool
	if c.Tools.Exec.Enable {
		ex, err := shell.New(shell.Options{
			Workspace: ws, RestrictToWorkspace: c.Tools.RestrictToWorkspace,
			DefaultTimeout: time.Duration(c.Tools.Exec.Timeout) * time.Second,
			DenyPatterns:   c.Tools.Exec.DenyPatterns, AllowPatterns: c.Tools.Exec.AllowPatterns,
			ExtraEnv: c.Tools.Exec.AllowedEnvKeys, Sandbox: sandbox.Mode(sb), Logger: a.log,
			ReadOnly: expandAll(c.Tools.Exec.AllowPaths.ReadOnly), ReadWrite: expandAll(c.Tools.Exec.AllowPaths.ReadWrite),
			DenyNetwork: !c.Tools.Exec.NetworkAllowed(), AllowUnixSockets: c.Tools.Exec.AllowUnixSockets, Limits: execLimits(c.Tools.Exec.Limits),
			Approval: a.execApproval(),
			Sessions: sessions,
		})
		if err != nil {
			return nil, fmt.Errorf("tools.exec: %w", err)
		}
		out = append(out, ex)
		if sessions != nil && sessions.Supported() {
			out = append(out, shell.SessionTools(sessions, a.execApproval(), ws)...)
		}
	}
	files, err := fs.All(fs.Options{Workspace: ws, RestrictToWorkspace: c.Tools.RestrictToWorkspace, Logger: a.log})
	if err != nil {
		return nil, fmt.Errorf("file tools: %w", err)
	}
	out = append(out, files...)
	if a.browser != nil {
		// One Chromium for every agent; the workspace keeps their tabs apart.
		out = append(out, a.browser.Tool(ws).WithApproval(a.browserApproval()))
	}

	if !c.Tools.Web.WebEnabled() {
		return out, nil
	}
	s := c.Tools.Web.Search
	search, err := web.NewSearch(web.SearchOptions{Provider: s.Provider, APIKey: s.APIKey, BaseURL: s.BaseURL, MaxResults: s.MaxResults,
		Proxy: c.Tools.Web.Proxy, UserAgent: c.Tools.Web.UserAgent, Timeout: time.Duration(s.Timeout) * time.Second, Logger: a.log})
	if err != nil {
		return nil, fmt.Errorf("tools.web.search: %w", err)
	}
	fetch, err := web.NewFetch(web.FetchOptions{MaxChars: c.Tools.Web.Fetch.MaxChars, Proxy: c.Tools.Web.Proxy, UserAgent: c.Tools.Web.UserAgent, SSRFAllowlist: ssrfAllowlist(c), Logger: a.log})
	if err != nil {
		return nil, fmt.Errorf("tools.web.fetch: %w", err)
	}
	return append(out, search, fetch), nil
}

// expandAll resolves "~/" in configured paths.
func expandAll(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		out = append(out, configs.ExpandHome(p))
	}
	return out
}

func execLimits(l configs.ExecLimits) sandbox.Limits {
	return sandbox.Limits{CPUSeconds: l.CPUSeconds, MemoryMB: l.MemoryMB, Processes: l.Processes, FileSizeMB: l.FileSizeMB}
}

// sessionCloseWait bounds how long stopping waits for exec sessions'
// processes to end after they were killed.
const sessionCloseWait = 10 * time.Second

// startSessions makes the gateway's exec sessions when exec and sessions
// are enabled on a platform that has them, runs their reaper until the
// gateway stops, and has w.close kill every session and wait for it.
func (w *wired) startSessions(ctx context.Context, a *app) {
	ex := a.loaded.Config.Tools.Exec
	if !ex.Enable || !ex.Sessions.Enable {
		return
	}
	s := ex.Sessions
	w.sessions = shell.NewSessions(shell.SessionOptions{
		MaxSessions: s.MaxSessions, IdleTimeout: time.Duration(s.IdleTimeoutMinutes) * time.Minute,
		MaxLifetime: time.Duration(s.MaxLifetimeMinutes) * time.Minute, BufferChars: s.MaxOutputChars,
		Redact: a.redact, Logger: a.log,
	})
	if !w.sessions.Supported() {
		w.sessions = nil
		return
	}
	runCtx, stop := context.WithCancel(ctx)
	reaped := make(chan struct{})
	go func() {
		defer close(reaped)
		w.sessions.Run(runCtx)
	}()
	sessions := w.sessions
	w.closers = append(w.closers, func() {
		stop()
		<-reaped
		cctx, cancel := context.WithTimeout(context.Background(), sessionCloseWait)
		defer cancel()
		if err := sessions.Close(cctx); err != nil {
			a.log.Warn("exec sessions did not all end", "err", err)
		}
	})
}
