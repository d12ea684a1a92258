package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"sort"

	"github.com/spf13/cobra"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/tools/sandbox"
)

// finding is one doctor result.
type finding struct {
	level string // ok, warn, risk
	text  string
	fix   string
}

func newDoctorCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check the config and the machine for risky or broken settings, with fixes",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fs := diagnose(a.loaded)
			printFindings(cmd.OutOrStdout(), fs)
			for _, f := range fs {
				if f.level == "risk" {
					return fmt.Errorf("doctor: %d risk(s) found", countLevel(fs, "risk"))
				}
			}
			return nil
		},
	}
}

func countLevel(fs []finding, level string) int {
	n := 0
	for _, f := range fs {
		if f.level == level {
			n++
		}
	}
	return n
}

func printFindings(w io.Writer, fs []finding) {
	marks := map[string]string{"ok": "ok  ", "warn": "warn", "risk": "RISK"}
	for _, f := range fs {
		fmt.Fprintf(w, "[%s] %s\n", marks[f.level], f.text)
		if f.fix != "" {
			fmt.Fprintf(w, "       fix: %s\n", f.fix)
		}
	}
}

// diagnose inspects the loaded config and the machine.
func diagnose(l *configs.Loaded) []finding {
	c := &l.Config
	var out []finding
	add := func(level, text, fix string) { out = append(out, finding{level, text, fix}) }

	if l.Exists {
		if fi, err := os.Stat(l.Path); err == nil && fi.Mode().Perm()&0o077 != 0 {
			add("risk", fmt.Sprintf("config %s is readable by other users (mode %o); it holds your API keys", l.Path, fi.Mode().Perm()), "chmod 600 "+l.Path)
		} else if err == nil {
			add("ok", "config file is private (0600)", "")
		}
	} else {
		add("warn", "no config file: running on built-in defaults", "nanobot onboard")
	}

	keys := 0
	for name, p := range c.Providers {
		if p.APIKey != "" || p.APIBase != "" {
			keys++
		} else {
			add("warn", fmt.Sprintf("providers.%s has neither apiKey nor apiBase", name), "set providers."+name+".apiKey (or remove the entry)")
		}
	}
	if keys == 0 {
		add("risk", "no LLM provider is configured: every message gets an error reply", "set providers.<name>.apiKey in "+l.Path)
	}

	for _, name := range c.Channels.Enabled() {
		for _, a := range c.Channels.Common(name).AllowFrom {
			if a == "*" && name != "web" {
				add("risk", fmt.Sprintf("channels.%s.allowFrom is [\"*\"]: anyone who finds the bot can use it (and your API budget and tools)", name), "list your own sender ids, or leave allowFrom empty and approve people with `nanobot pairing approve`")
			}
		}
	}

	if !c.Tools.RestrictToWorkspace {
		add("risk", "tools.restrictToWorkspace is off: file and shell tools may reach any path the gateway's user can", "set tools.restrictToWorkspace to true")
	} else {
		add("ok", "file and shell tools are kept inside the workspace", "")
	}
	sandboxFindings(c, add)

	host := c.Gateway.Host
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		add("warn", fmt.Sprintf("the gateway listens on %s, beyond loopback: the web chat asks for its token (state/web_token); /metrics and /api/status are reachable by anyone who can reach the port", host), "bind gateway.host to 127.0.0.1 behind a TLS reverse proxy, or firewall the port")
	}
	return out
}

// sandboxFindings reports how exec and MCP stdio servers are confined.
func sandboxFindings(c *configs.Config, add func(level, text, fix string)) {
	sup := sandbox.Detect()
	mode := sandbox.Mode(c.Tools.Exec.Sandbox)
	resolved, err := sandbox.ResolveMode(mode)
	switch {
	case mode == sandbox.ModeNone:
		add("risk", "tools.exec.sandbox is \"none\": commands and MCP servers run without OS-level confinement", "set tools.exec.sandbox to \"auto\"")
	case err != nil:
		add("risk", fmt.Sprintf("sandbox %q is not available here: %v", mode, err), "use \"auto\", or install bubblewrap (apt install bubblewrap) for \"bwrap\"")
	case resolved == sandbox.ModeNone:
		add("warn", "no OS sandbox is available on this machine ("+sup.String()+"): exec relies on the command guard and the workspace check only", "use a kernel with Landlock (5.13+, lsm=landlock), or install bubblewrap, or run the gateway in the provided Docker image")
	default:
		add("ok", fmt.Sprintf("commands and MCP stdio servers run confined: %s (%s)", resolved, sup), "")
		if resolved == sandbox.ModeLandlock && !c.Tools.Exec.Network && !sup.UserNS && sup.LandlockABI < 4 {
			add("risk", "tools.exec.network is off but this host can enforce it neither with Landlock ABI 4 nor a network namespace: commands fail to start", "set tools.exec.sandbox to \"bwrap\", or turn tools.exec.network on")
		}
		if os.Getuid() == 0 {
			add("warn", "the gateway runs as root: the process limit (RLIMIT_NPROC) does not bind root, so fork bombs are only stopped where a pids cgroup can be created", "run the gateway as an unprivileged user (the systemd unit and Docker image do)")
		}
	}
	for _, name := range sortedNames(c.Tools.MCPServers) {
		if s := c.Tools.MCPServers[name]; s.Type == "stdio" && s.Sandbox == string(sandbox.ModeNone) && mode != sandbox.ModeNone {
			add("warn", fmt.Sprintf("tools.mcpServers.%s.sandbox is \"none\": this server runs unconfined", name), "remove the override and add the folders it needs to tools.exec.allowPaths")
		}
	}
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
