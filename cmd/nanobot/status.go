package main

import (
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/spf13/cobra"
)

func newStatusCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the config, workspace, model, provider and channels (never the keys)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			printStatus(cmd.OutOrStdout(), a)
			return nil
		},
	}
}

func printStatus(w io.Writer, a *app) {
	l := a.loaded
	c := &l.Config
	if l.Exists {
		fmt.Fprintf(w, "config:     %s\n", l.Path)
		if fi, err := os.Stat(l.Path); err == nil && fi.Mode().Perm()&0o077 != 0 {
			fmt.Fprintf(w, "            warning: readable by others (mode %o); run chmod 600 %s\n", fi.Mode().Perm(), l.Path)
		}
	} else {
		fmt.Fprintf(w, "config:     %s (not found: built-in defaults; run `nanobot onboard`)\n", l.Path)
	}
	ws := l.Paths.Workspace
	if _, err := os.Stat(ws); err != nil {
		ws += " (missing; run `nanobot onboard`)"
	}
	fmt.Fprintf(w, "workspace:  %s\n", ws)
	fmt.Fprintf(w, "model:      %s\n", c.Agents.Defaults.Model)
	fmt.Fprintf(w, "provider:   %s\n", providerLine(a))

	fmt.Fprintln(w, "providers:")
	names := make([]string, 0, len(c.Providers))
	for n := range c.Providers {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		fmt.Fprintln(w, "  (none configured)")
	}
	for _, n := range names {
		p := c.Providers[n]
		key := "no key"
		if p.APIKey != "" {
			key = "key set"
		}
		base := ""
		if p.APIBase != "" {
			base = ", apiBase " + p.APIBase
		}
		fmt.Fprintf(w, "  %-12s %s%s\n", n, key, base)
	}

	fmt.Fprintln(w, "channels:")
	enabled := c.Channels.Enabled()
	if len(enabled) == 0 {
		fmt.Fprintln(w, "  (none enabled)")
	}
	for _, n := range enabled {
		fmt.Fprintf(w, "  %-12s enabled, %d allowed sender(s)\n", n, len(c.Channels.Common(n).AllowFrom))
	}
	fmt.Fprintf(w, "gateway:    http://%s:%d\n", c.Gateway.Host, c.Gateway.Port)
}

// providerLine says which provider the model resolves to.
func providerLine(a *app) string {
	d := a.loaded.Config.Agents.Defaults
	if d.Provider != "" && d.Provider != "auto" {
		return d.Provider + " (forced by agents.defaults.provider)"
	}
	return "auto"
}
