package main

import (
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
	return builtinToolsIn(a, a.loaded.Paths.Workspace, a.loaded.Config.Tools.Exec.Sandbox)
}

// builtinToolsIn builds the built-in tools working in workspace ws, with
// exec confined by sandbox mode sb.
func builtinToolsIn(a *app, ws, sb string) ([]tools.Tool, error) {
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
		})
		if err != nil {
			return nil, fmt.Errorf("tools.exec: %w", err)
		}
		out = append(out, ex)
	}
	files, err := fs.All(fs.Options{Workspace: ws, RestrictToWorkspace: c.Tools.RestrictToWorkspace, Logger: a.log})
	if err != nil {
		return nil, fmt.Errorf("file tools: %w", err)
	}
	out = append(out, files...)
	if a.browser != nil {
		// One Chromium for every agent; the workspace keeps their tabs apart.
		out = append(out, a.browser.Tool(ws))
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
