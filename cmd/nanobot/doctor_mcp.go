package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/mcp"
	"github.com/nanobot-go/nanobot/tools/sandbox"
)

// doctorMCPWait bounds how long doctor waits for the MCP servers.
const doctorMCPWait = 20 * time.Second

// diagnoseMCP connects to every configured MCP server once, as the gateway
// would (stdio servers are started in the workspace through the sandbox),
// and reports the ones that fail, with their error.
func diagnoseMCP(ctx context.Context, l *configs.Loaded) []finding {
	servers := l.Config.Tools.MCPServers
	if len(servers) == 0 {
		return nil
	}
	ws := l.Paths.Workspace
	m := mcp.New(servers, tools.NewRegistry(), mcp.Options{
		Dir: ws, Sandbox: sandbox.Mode(l.Config.Tools.Exec.Sandbox),
		Writable: append([]string{ws}, expandAll(l.Config.Tools.Exec.AllowPaths.ReadWrite)...), Readable: expandAll(l.Config.Tools.Exec.AllowPaths.ReadOnly),
		DenyNetwork: !l.Config.Tools.Exec.NetworkAllowed(), AllowUnixSockets: l.Config.Tools.Exec.AllowUnixSockets, Limits: execLimits(l.Config.Tools.Exec.Limits),
		ConnectTimeout: doctorMCPWait,
		OAuth:          mcp.FileTokenStore{Path: filepath.Join(l.Paths.State, "mcp-auth.json")},
	})
	m.Start(ctx, doctorMCPWait)
	defer m.Close()
	st := m.Status()
	sort.Slice(st, func(i, j int) bool { return st[i].Name < st[j].Name })
	var out []finding
	for _, s := range st {
		path := "tools.mcpServers." + s.Name
		switch s.State {
		case mcp.StateConnected:
			out = append(out, finding{"ok", fmt.Sprintf("MCP server %s (%s) connects and offers %d tools", s.Name, s.Transport, s.Tools), ""})
		case mcp.StateConnecting:
			out = append(out, finding{"warn", fmt.Sprintf("MCP server %s (%s) did not connect within %s", s.Name, s.Transport, doctorMCPWait),
				fmt.Sprintf("check %s; the agent runs without its tools until it connects", path)})
		default:
			out = append(out, finding{"warn", fmt.Sprintf("MCP server %s (%s) fails to start: %s", s.Name, s.Transport, s.LastError),
				fmt.Sprintf("check %s (command, args, url, headers); run the command by hand to see its error", path)})
		}
	}
	return out
}
