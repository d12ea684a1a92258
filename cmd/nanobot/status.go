package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
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
	return command("status", "Show the config, workspace, model, provider and channels (never the keys)", func(cmd *cobra.Command) error {
		printStatus(cmd.OutOrStdout(), a)
		return nil
	})
}

func printStatus(w io.Writer, a *app) {
	printSetup(w, a)
	printAgents(w, a)
	printProviders(w, &a.loaded.Config)
	fmt.Fprintln(w, "sign-ins:")
	if err := printSignIns(w, a.signIn(), time.Now(), "  "); err != nil {
		fmt.Fprintf(w, "  (cannot read: %v)\n", err)
	}
	printChannels(w, &a.loaded.Config)
	printGateway(w, &a.loaded.Config)
	printGoals(w, a)
}

// printSetup prints where the config and workspace are, the model, the
// provider and the sandbox.
func printSetup(w io.Writer, a *app) {
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
	fmt.Fprintf(w, "recall:     %s\n", recallLine(a))
	sb := sandbox.Describe(sandbox.Mode(c.Tools.Exec.Sandbox))
	if strings.HasPrefix(sb, "none") {
		sb += " — WARNING: commands are not confined; see `nanobot doctor`"
	}
	fmt.Fprintf(w, "sandbox:    %s\n", sb)
}

// printProviders lists the configured providers: key set or not, and
// their apiBase (never the key).
func printProviders(w io.Writer, c *configs.Config) {
	fmt.Fprintln(w, "providers:")
	if len(c.Providers) == 0 {
		fmt.Fprintln(w, "  (none configured)")
	}
	for _, n := range slices.Sorted(maps.Keys(c.Providers)) {
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
}

// printChannels lists the enabled channels.
func printChannels(w io.Writer, c *configs.Config) {
	fmt.Fprintln(w, "channels:")
	enabled := newChannelRegistry().Enabled(c.Channels)
	if len(enabled) == 0 {
		fmt.Fprintln(w, "  (none enabled)")
	}
	problems := channelProblems(c)
	for _, n := range enabled {
		if err := problems[n]; err != nil {
			fmt.Fprintf(w, "  %-12s enabled, but the gateway cannot start it: %v\n", n, err)
			continue
		}
		if _, mentioned := c.Channels.Platforms[n]; !mentioned {
			fmt.Fprintf(w, "  %-12s on by default (\"channels\": {\"%s\": {\"enabled\": false}} turns it off)\n", n, n)
			continue
		}
		fmt.Fprintf(w, "  %-12s enabled, %d allowed sender(s)\n", n, len(c.Channels.Common(n).AllowFrom))
	}
}

// printGateway says whether the gateway runs and, if it does, how its
// channels, queues, MCP servers and cluster are.
func printGateway(w io.Writer, c *configs.Config) {
	fmt.Fprintf(w, "gateway:    http://%s:%d", c.Gateway.Host, c.Gateway.Port)
	st, err := fetchStatus(c.Gateway.Host, c.Gateway.Port)
	if err != nil {
		fmt.Fprintln(w, " (not running)")
		return
	}
	fmt.Fprintf(w, " (running %s, up since %s, ready: %v)\n", st.Version, st.Started.Local().Format("2006-01-02 15:04"), st.Ready)
	printChannelHealth(w, st)
	fmt.Fprintf(w, "  queues: %d inbound, %d outbound, %d unfinished\n", st.Inbound, st.Outbound, st.Pending)
	printReload(w, st.Reload)
	for _, m := range st.MCP {
		fmt.Fprintf(w, "  mcp %-8s %s (%s, %d tools) since %s%s\n", m.Name, m.State, m.Transport, m.Tools,
			m.Since.Local().Format("15:04:05"), troubles(m.Restarts, m.LastError))
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

// printChannelHealth prints one line per channel of a running gateway; it
// returns how many have stopped for good.
func printChannelHealth(w io.Writer, st *gateway.Status) (failed int) {
	for _, n := range slices.Sorted(maps.Keys(st.Channels)) {
		h := st.Channels[n]
		line := fmt.Sprintf("  %-12s %s since %s", n, h.State, h.Since.Local().Format("15:04:05")) + troubles(h.Restarts, h.LastError)
		if h.State == channels.StateFailed {
			line += " (stopped for good: fix the cause, then reload with SIGHUP or restart the gateway)"
			failed++
		}
		fmt.Fprintln(w, line)
	}
	return failed
}

// troubles is the tail of a status line for a service's restarts and
// last error ("" when it has neither).
func troubles(restarts int, lastErr string) string {
	s := ""
	if restarts > 0 {
		s += fmt.Sprintf(", %d restart(s)", restarts)
	}
	if lastErr != "" {
		s += ", last error: " + lastErr
	}
	return s
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

// defaultModel resolves the default agent's model and builds its provider
// as the agent does (no request is made): what it resolved to, or why the
// agent would answer with setup instructions instead.
func defaultModel(a *app) (providers.Resolution, error) {
	c := &a.loaded.Config
	d := c.AgentList()[0].Settings
	opts := providerOptions(c, d, slog.New(slog.DiscardHandler), a.signIn())
	_, ress, err := providers.NewChainOf([]providers.ChainModel{{Model: d.Model, Provider: d.Provider}}, providerSettings(c, a.signIn()), opts)
	if err != nil {
		return providers.Resolution{}, err
	}
	return ress[0], nil
}

// providerLine says which provider the model resolves to, and why.
func providerLine(a *app) string {
	res, err := defaultModel(a)
	if err != nil {
		return "none — " + err.Error()
	}
	api := ""
	if res.API == providers.APIResponses {
		api = " through the Responses API"
	}
	return fmt.Sprintf("%s (%s; sends model %q to %s%s)", res.Provider, res.Reason, res.Model, res.APIBase, api)
}

// recallLine says how memory_search ranks for the default agent: by words,
// or with the embedding model and the provider it resolves to.
func recallLine(a *app) string {
	c := &a.loaded.Config
	m := c.AgentList()[0].Settings.Memory
	if m.EmbeddingModel == "" {
		return "memory_search by words (agents.defaults.memory.embeddingModel adds meaning; docs/memory.md)"
	}
	res, err := providers.Resolve(m.EmbeddingModel, m.EmbeddingProvider, providerSettings(c, a.signIn()))
	if err != nil {
		return "memory_search by words — the embedding model cannot be used: " + err.Error()
	}
	return fmt.Sprintf("memory_search by words and meaning: embeddings from %s (%s) at %s/embeddings", res.Model, res.Provider, res.APIBase)
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

// printReload says what the last config reload did and which changed
// settings wait for a restart.
func printReload(w io.Writer, r *gateway.ReloadStatus) {
	if r == nil {
		return
	}
	at := r.At.Local().Format("15:04:05")
	switch {
	case r.Error != "":
		fmt.Fprintf(w, "  reload at %s (%s) failed, running config kept: %s\n", at, r.Source, r.Error)
	case len(r.Applied) > 0:
		fmt.Fprintf(w, "  reload at %s (%s) applied: %s\n", at, r.Source, strings.Join(r.Applied, ", "))
	default:
		fmt.Fprintf(w, "  reload at %s (%s): nothing to apply live\n", at, r.Source)
	}
	if len(r.Restart) > 0 {
		fmt.Fprintf(w, "  restart needed for: %s\n", strings.Join(r.Restart, ", "))
	}
}
