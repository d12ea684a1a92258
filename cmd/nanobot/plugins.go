package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nanobot-go/nanobot/agent/hooks"
	"github.com/nanobot-go/nanobot/tools/mcp"
)

func newPluginsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "plugins", Short: "What extends the agent: MCP servers and hooks"}
	cmd.AddCommand(command("list", "List the MCP servers and hooks with their state (from the running gateway, when there is one)", func(cmd *cobra.Command) error {
		printPlugins(cmd.OutOrStdout(), a)
		return nil
	}))
	return cmd
}

// printPlugins lists the configured MCP servers and hooks; with a running
// gateway, each with its state (connection and tools; calls and failures).
func printPlugins(w io.Writer, a *app) {
	c := &a.loaded.Config
	st, err := fetchStatus(c.Gateway.Host, c.Gateway.Port)
	running := err == nil
	if !running {
		fmt.Fprintln(w, "(the gateway is not running: the configured plugins, without their state)")
	}
	names := make([]string, 0, len(c.Tools.MCPServers))
	for n := range c.Tools.MCPServers {
		names = append(names, n)
	}
	slices.Sort(names)
	fmt.Fprintf(w, "MCP servers (%d):\n", len(names))
	for _, n := range names {
		line := "  " + n
		if running {
			i := slices.IndexFunc(st.MCP, func(s mcp.Status) bool { return s.Name == n })
			if i < 0 {
				line += "  not started (disabled, or another agent's)"
			} else {
				m := st.MCP[i]
				line += fmt.Sprintf("  %s (%s, %d tools, %d restarts)", m.State, m.Transport, m.Tools, m.Restarts)
				if m.LastError != "" {
					line += " — " + m.LastError
				}
			}
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "hooks (%d):\n", len(c.Hooks))
	for _, h := range c.Hooks {
		kind := "program"
		if h.URL != "" {
			kind = "http"
		}
		line := fmt.Sprintf("  %s  %s at %s, on failure %s", h.Name, kind, strings.Join(h.Points, ", "), map[bool]string{true: "block", false: "ignore"}[h.Blocks()])
		switch {
		case h.Disabled:
			line += "  (disabled)"
		case running:
			i := slices.IndexFunc(st.Hooks, func(s hooks.Stat) bool { return s.Name == h.Name })
			if i >= 0 {
				line += fmt.Sprintf("  — %d calls, %d failures since the start", st.Hooks[i].Calls, st.Hooks[i].Failures)
			}
		}
		fmt.Fprintln(w, line)
	}
}
