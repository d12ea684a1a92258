package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools/sandbox"
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
	fmt.Fprintf(w, "model:      %s\n", c.AgentList()[0].Settings.Model)
	fmt.Fprintf(w, "provider:   %s\n", providerLine(a))
	sb := sandbox.Describe(sandbox.Mode(c.Tools.Exec.Sandbox))
	if strings.HasPrefix(sb, "none") {
		sb += " — WARNING: commands are not confined; see `nanobot doctor`"
	}
	fmt.Fprintf(w, "sandbox:    %s\n", sb)

	printAgents(w, a)

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

	fmt.Fprintln(w, "sign-ins:")
	if err := printSignIns(w, a.signIn(), time.Now(), "  "); err != nil {
		fmt.Fprintf(w, "  (cannot read: %v)\n", err)
	}

	fmt.Fprintln(w, "channels:")
	enabled := c.Channels.Enabled()
	if len(enabled) == 0 {
		fmt.Fprintln(w, "  (none enabled)")
	}
	for _, n := range enabled {
		fmt.Fprintf(w, "  %-12s enabled, %d allowed sender(s)\n", n, len(c.Channels.Common(n).AllowFrom))
	}
	fmt.Fprintf(w, "gateway:    http://%s:%d", c.Gateway.Host, c.Gateway.Port)
	st, err := fetchStatus(c.Gateway.Host, c.Gateway.Port)
	if err != nil {
		fmt.Fprintln(w, " (not running)")
		return
	}
	fmt.Fprintf(w, " (running %s, up since %s, ready: %v)\n", st.Version, st.Started.Local().Format("2006-01-02 15:04"), st.Ready)
	chNames := make([]string, 0, len(st.Channels))
	for n := range st.Channels {
		chNames = append(chNames, n)
	}
	sort.Strings(chNames)
	for _, n := range chNames {
		h := st.Channels[n]
		line := fmt.Sprintf("  %-12s %s since %s", n, h.State, h.Since.Local().Format("15:04:05"))
		if h.Restarts > 0 {
			line += fmt.Sprintf(", %d restart(s)", h.Restarts)
		}
		if h.LastError != "" {
			line += ", last error: " + h.LastError
		}
		if h.State == channels.StateFailed {
			line += " (stopped for good: fix the cause, then reload with SIGHUP or restart the gateway)"
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "  queues: %d inbound, %d outbound, %d unfinished\n", st.Inbound, st.Outbound, st.Pending)
	for _, m := range st.MCP {
		line := fmt.Sprintf("  mcp %-8s %s (%s, %d tools) since %s", m.Name, m.State, m.Transport, m.Tools, m.Since.Local().Format("15:04:05"))
		if m.Restarts > 0 {
			line += fmt.Sprintf(", %d restart(s)", m.Restarts)
		}
		if m.LastError != "" {
			line += ", last error: " + m.LastError
		}
		fmt.Fprintln(w, line)
	}
	if cl := st.Cluster; cl != nil {
		fmt.Fprintf(w, "cluster:    %s (role %s), %d message(s) waiting\n", cl.Instance, cl.Role, cl.Lag)
		for _, m := range cl.Members {
			line := fmt.Sprintf("  %-24s %-8s partitions %v, seen %s", m.Instance, m.Role, m.Partitions, m.Seen.Local().Format("15:04:05"))
			if m.Instance == cl.Instance && cl.Channels {
				line += " (channels active)"
			}
			fmt.Fprintln(w, line)
		}
	}
}

// fetchStatus asks a running gateway for its health.
func fetchStatus(host string, port int) (*gateway.Status, error) {
	if host == "0.0.0.0" || host == "::" || host == "" {
		host = "127.0.0.1"
	}
	cl := &http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get("http://" + net.JoinHostPort(host, fmt.Sprint(port)) + "/api/status")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	var st gateway.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, err
	}
	return &st, nil
}

// providerLine says which provider the model resolves to, and why.
func providerLine(a *app) string {
	c := &a.loaded.Config
	d := c.AgentList()[0].Settings
	res, err := providers.Resolve(d.Model, d.Provider, providerSettings(c, a.signIn()))
	if err != nil {
		return "none — " + err.Error()
	}
	api := ""
	if res.API == providers.APIResponses {
		api = " through the Responses API"
	}
	return fmt.Sprintf("%s (%s; sends model %q to %s%s)", res.Provider, res.Reason, res.Model, res.APIBase, api)
}

// printAgents lists the agents, presets and bindings of a config that has
// more than the default agent.
func printAgents(w io.Writer, a *app) {
	l := a.loaded
	c := &l.Config
	list := c.AgentList()
	if len(list) == 1 && len(c.Bindings) == 0 && len(c.ModelPresets) == 0 {
		return
	}
	fmt.Fprintln(w, "agents:")
	for _, ag := range list {
		model := ag.Settings.Model
		if ag.Settings.ModelPreset != "" {
			model += " (preset " + ag.Settings.ModelPreset + ")"
		}
		line := fmt.Sprintf("  %-12s %s, workspace %s", ag.Name, model, l.Paths.ForAgent(ag).Workspace)
		if !ag.Tools.Empty() {
			line += fmt.Sprintf(", tools allow %v deny %v", ag.Tools.Allow, ag.Tools.Deny)
		}
		if ag.SessionScope != configs.ScopePerChat {
			line += ", sessions " + ag.SessionScope
		}
		fmt.Fprintln(w, line)
	}
	if len(c.ModelPresets) > 0 {
		names := make([]string, 0, len(c.ModelPresets))
		for n := range c.ModelPresets {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintln(w, "presets:")
		for _, n := range names {
			p := c.ModelPresets[n]
			prov := p.Provider
			if prov == "" {
				prov = "auto"
			}
			fmt.Fprintf(w, "  %-12s %s (provider %s)\n", n, p.Model, prov)
		}
	}
	fmt.Fprintln(w, "bindings:")
	if len(c.Bindings) == 0 {
		fmt.Fprintln(w, "  (none: every message goes to the default agent)")
	}
	for i, b := range c.Bindings {
		var conds []string
		for _, kv := range [][2]string{{"channel", b.Match.Channel}, {"chatId", b.Match.ChatID}, {"senderId", b.Match.SenderID}, {"chatType", b.Match.ChatType}, {"threadId", b.Match.ThreadID}} {
			if kv[1] != "" {
				conds = append(conds, kv[0]+"="+kv[1])
			}
		}
		if len(conds) == 0 {
			conds = []string{"everything"}
		}
		line := fmt.Sprintf("  %d. %s -> %s", i+1, strings.Join(conds, " "), b.Agent)
		if b.ModelPreset != "" {
			line += ", preset " + b.ModelPreset
		}
		if b.Tools != nil && len(b.Tools.Deny) > 0 {
			line += fmt.Sprintf(", deny %v", b.Tools.Deny)
		}
		if b.Queue != "" {
			line += ", queue " + b.Queue
		}
		fmt.Fprintln(w, line)
	}
}
