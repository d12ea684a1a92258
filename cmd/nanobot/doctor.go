package main

import (
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"reflect"
	"runtime"
	"slices"

	"github.com/spf13/cobra"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools/sandbox"
)

// finding is one doctor result.
type finding struct {
	level string // ok, warn, risk
	text  string
	fix   string
}

func newDoctorCmd(a *app) *cobra.Command {
	return command("doctor", "Check the config and the machine for risky or broken settings, with fixes", func(cmd *cobra.Command) error {
		fs := append(diagnose(a), diagnoseMCP(cmd.Context(), a.loaded)...)
		fs = append(fs, diagnoseSkills(a.loaded)...)
		printFindings(cmd.OutOrStdout(), fs)
		for _, f := range fs {
			if f.level == "risk" {
				return fmt.Errorf("doctor: %d risk(s) found", countLevel(fs, "risk"))
			}
		}
		return nil
	})
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
func diagnose(a *app) []finding {
	l := a.loaded
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

	if res, err := defaultModel(a); err != nil {
		add("risk", fmt.Sprintf("the model %q cannot be used, so every message gets setup instructions instead of an answer: %v", c.AgentList()[0].Settings.Model, err), "set the provider's key or address in "+l.Path+", or run `nanobot onboard --wizard --refresh`")
	} else {
		add("ok", fmt.Sprintf("the model %q goes to %s (%s)", res.Model, res.Provider, res.Reason), "")
	}
	for _, name := range slices.Sorted(maps.Keys(c.Providers)) {
		p := c.Providers[name]
		spec, known := providers.Lookup(name)
		switch {
		case p.APIKey != "" || p.APIBase != "":
		case reflect.ValueOf(p).IsZero():
			// an empty entry: the starter file's placeholder
		case known && (spec.IsLocal && spec.DefaultAPIBase != "" || spec.SignIn || spec.AWSCredentials):
			// needs no key: its default address, a sign-in, AWS credentials
		default:
			add("warn", fmt.Sprintf("providers.%s has settings but neither apiKey nor apiBase, so it is not used", name), "set providers."+name+".apiKey (or remove the entry)")
		}
	}

	problems := channelProblems(c)
	for _, name := range slices.Sorted(maps.Keys(problems)) {
		add("risk", fmt.Sprintf("%v: the gateway does not start while channels.%s is enabled", problems[name], name), fmt.Sprintf("set what it names, or channels.%s.enabled to false", name))
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
	mode := sandbox.Mode(c.Tools.Exec.Sandbox)
	if mode == sandbox.ModeNone {
		add("risk", "tools.exec.sandbox is \"none\": commands run without OS-level confinement", "set tools.exec.sandbox to \"auto\"")
	} else if resolved, err := sandbox.ResolveMode(mode); err != nil {
		add("risk", fmt.Sprintf("sandbox %q is not available here: %v", mode, err), "use \"auto\"")
	} else if resolved == sandbox.ModeNone {
		add("warn", "no OS sandbox is available on this machine (no Landlock, no working bubblewrap): exec relies on the command guard and the workspace check only", "use Linux 5.13 or newer with Landlock enabled (lsm=...,landlock), or install bubblewrap (apt install bubblewrap)")
	} else {
		add("ok", "commands and MCP stdio servers run confined: "+sandbox.Describe(mode), "")
		if ok, why := sandbox.PortWall(mode); !ok && c.Tools.Exec.NetworkAllowed() {
			add("warn", "confined commands can connect to the gateway's own port, where the credential check is the only wall: "+why, "use Linux 6.7 or newer (Landlock ABI 4); under bwrap, a bubblewrap that is not setuid")
		}
		if !sandbox.ProcessLimitEnforced() {
			add("warn", "the gateway runs as root and no pids cgroup can be made: tools.exec.limits.processes does not bind (a fork bomb is stopped only by the timeout)", "run the gateway as an ordinary user (the systemd unit and the Docker image do)")
		}
		switch {
		case !c.Tools.Exec.AllowUnixSockets && !sandbox.UnixSocketFilterSupported():
			add("risk", fmt.Sprintf("this build cannot block UNIX sockets on %s (the seccomp filter exists for amd64 and arm64): every confined command will fail", runtime.GOARCH), "set tools.exec.allowUnixSockets to true (commands may then reach local daemons' sockets)")
		case c.Tools.Exec.AllowUnixSockets:
			add("warn", "tools.exec.allowUnixSockets is true: confined commands may talk to local daemons through their sockets (the Docker socket is root on the host)", "set it to false unless commands need a daemon; or allow one MCP server with tools.mcpServers.<name>.allowUnixSockets")
		}
		if resolved == sandbox.ModeLandlock && !sandbox.Namespaces() {
			add("warn", "user namespaces are not available: confined commands keep their capabilities dropped and their files restricted, but share the gateway's PID namespace (no private /proc) and network", "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1 or kernel.apparmor_restrict_unprivileged_userns=0)")
			if !c.Tools.Exec.NetworkAllowed() && sandbox.LandlockABI() < 4 {
				add("risk", fmt.Sprintf("tools.exec.network is false but this kernel's Landlock (ABI %d) cannot restrict the network and there are no user namespaces: every command will fail", sandbox.LandlockABI()), "use Linux 6.7 or newer, allow user namespaces, use sandbox \"bwrap\", or set tools.exec.network to true")
			}
		}
	}
	if bw, err := sandbox.Bwrap(); err == nil {
		add("ok", "bubblewrap works ("+bw+"): tools.exec.sandbox \"bwrap\" is available", "")
	}

	out = append(out, diagnoseVoice(c)...)
	out = append(out, diagnoseTranscription(c)...)
	out = append(out, diagnoseBrowser(c)...)

	host := c.Gateway.Host
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		add("warn", fmt.Sprintf("the gateway listens on %s, beyond loopback: the web chat asks for its token (state/web_token); /metrics and /api/status are reachable by anyone who can reach the port", host), "bind gateway.host to 127.0.0.1 behind a TLS reverse proxy, or firewall the port")
	}
	return out
}
