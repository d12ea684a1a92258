package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nanobot-go/nanobot/tools/mcp"
)

// mcpTokenStore is the instance's store of MCP OAuth sign-ins.
func (a *app) mcpTokenStore() mcp.FileTokenStore {
	return mcp.FileTokenStore{Path: filepath.Join(a.loaded.Paths.State, "mcp-auth.json")}
}

func newMCPCmd(a *app) *cobra.Command {
	var (
		port    int
		timeout time.Duration
	)
	login := commandArg("login <server>", "Sign in to an OAuth MCP server in the browser; the tokens are kept in <instance>/state/mcp-auth.json (mode 0600)", func(cmd *cobra.Command, server string) error {
		servers := a.loaded.Config.Tools.MCPServers
		cfg, ok := servers[server]
		if !ok {
			names := make([]string, 0, len(servers))
			for n := range servers {
				names = append(names, n)
			}
			sort.Strings(names)
			return fmt.Errorf("mcp login: no tools.mcpServers.%s in %s (servers: %s)", server, a.loaded.Path, strings.Join(names, ", "))
		}
		if !mcp.IsOAuth(cfg) {
			return fmt.Errorf("mcp login: tools.mcpServers.%s has no \"auth\": \"oauth\"; add it to sign in", server)
		}
		if err := a.loaded.Paths.Ensure(); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
		defer cancel()
		w := cmd.OutOrStdout()
		store := a.mcpTokenStore()
		n, err := mcp.Login(ctx, server, cfg, mcp.LoginOptions{
			Store: store, RedirectPort: port,
			Open: func(url string) error {
				fmt.Fprintf(w, "Open this URL in a browser on this machine to sign in to %s:\n\n  %s\n\nWaiting for the sign-in…\n", server, url)
				return nil
			},
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s: signed in (%d tools); the tokens are in %s\n", server, n, store.Path)
		return nil
	})
	login.Long = `Sign in to a remote MCP server whose config entry has "auth": "oauth".

nanobot finds the server's authorization server, registers itself as a client,
and prints a URL to open in a browser on this machine; after you approve, the
browser returns to http://127.0.0.1:PORT/auth/mcp/callback and the tokens are
stored. A running gateway picks the sign-in up at its next reconnect to the
server (restart it to connect at once). On a headless server, forward the port
(ssh -L PORT:127.0.0.1:PORT) and pass it with --port.`
	login.Flags().IntVar(&port, "port", 0, "loopback port of the browser redirect (default: a free one)")
	login.Flags().DurationVar(&timeout, "timeout", 15*time.Minute, "give up waiting for the sign-in after this long")
	return group("mcp", "Sign in to MCP servers that need OAuth (tools.mcpServers.<name>.auth: \"oauth\")", login)
}
