package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/chzyer/readline"
	"github.com/spf13/cobra"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/skills/registry"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/deploy"
	"github.com/nanobot-go/nanobot/gateway"
	"github.com/nanobot-go/nanobot/internal/stateformat"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools/sandbox"
)

func newGatewayCmd(a *app) *cobra.Command {
	var port int
	var host, role string
	var background bool
	cmd := command("gateway", "Run the gateway daemon (chat channels, cron, heartbeat, web chat)", func(cmd *cobra.Command) error {
		if background {
			return startBackground(cmd, a)
		}
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		r := &restarter{stop: stop}
		if err := runGateway(ctx, a, r); err != nil {
			return err
		}
		if from, ok := r.requested(); ok { // everything is released by now
			return restartAfter(a.loaded.Paths.State, from)
		}
		return nil
	})
	cmd.Flags().BoolVar(&background, "background", false, "start detached, logging to logs/gateway.log (then: nanobot gateway status, logs, restart or stop)")
	cmd.Flags().IntVar(&port, "port", 0, "HTTP port (overrides gateway.port)")
	cmd.Flags().StringVar(&host, "host", "", "HTTP bind address (overrides gateway.host)")
	cmd.Flags().StringVar(&role, "role", "", "cluster role: all, channels or worker (overrides cluster.role; see docs/cluster.md)")
	a.flagOverrides(cmd, map[string]string{"port": "gateway.port", "host": "gateway.host", "role": "cluster.role"})
	cmd.AddCommand(newInstallServiceCmd(a), newGatewayStatusCmd(a), newGatewayStopCmd(a), newGatewayRestartCmd(a), newGatewayLogsCmd(a))
	return cmd
}

func runGateway(ctx context.Context, a *app, r *restarter) error {
	l := a.loaded
	if !l.Exists {
		a.log.Info("no config file: running on built-in defaults; `nanobot onboard` writes one", "path", l.Path)
	}
	// Listen before building the provider, tools, MCP servers and channels,
	// so /healthz answers from the first milliseconds; gateway.Run takes
	// the listener over.
	early, err := gateway.ListenEarly(l.Config.Gateway.Host, l.Config.Gateway.Port)
	if err != nil {
		if other := anotherGateway(l.Paths.State); other != nil {
			return other // its port, most likely: say whose
		}
		return err
	}
	handed := false
	defer func() {
		if !handed {
			early.Close()
		}
	}()
	// The data folder's format: upgraded if older, refused if newer, before
	// anything (the pidfile included) is written to it.
	up, err := stateformat.Open(l.Paths.Dir, l.Paths.State, "nanobot "+buildVersion())
	if err != nil {
		return err
	}
	if len(up.Steps) > 0 {
		a.log.Info("data folder upgraded", "from_format", up.From, "to_format", up.To, "steps", up.Steps)
	}
	restartedFrom := takeRestartOrigin(l.Paths.State)
	if l.Config.Cluster.Role == "" || l.Config.Cluster.Role == gateway.RoleAll {
		release, err := writePid(l.Paths.State)
		if err != nil {
			return err
		}
		defer release()
	}
	if a.approvals, err = a.newApprovals(); err != nil {
		return err
	}
	w, err := a.wire(ctx)
	if err != nil {
		return err
	}
	defer w.close()
	// Probing the sandbox starts a confined child: a second process whose
	// start takes the cores for about 50 ms. It runs once the gateway has
	// started and answered what was waiting, not before the first poll (a
	// command run before then waits for the same probe).
	go func() {
		t := time.NewTimer(sandboxProbeDelay)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
			describeSandbox(a, l.Config.Tools.Exec)
		}
	}()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	reload := make(chan struct{}, 1)
	go func() {
		for range hup {
			select {
			case reload <- struct{}{}:
			default:
			}
		}
	}()
	si := a.signIn()
	opts := gateway.Options{
		Config: &l.Config, Paths: l.Paths,
		Provider: w.provider, Model: w.model, ProviderName: w.providerName, Tools: w.tools, Approvals: a.approvals, SwitchSkill: a.switchSkill,
		BuildModel: func(s configs.AgentDefaults) (providers.Provider, string, string) {
			p, model, name, _ := buildModel(&l.Config, s, a.log, si)
			return p, model, name
		},
		BuildPreset: func(p configs.ModelPreset) (providers.Provider, error) { return buildPreset(&l.Config, p, a.log, si) },
		BuildEmbedding: func(s configs.AgentDefaults) (*agent.Embedding, error) {
			return buildEmbedding(&l.Config, s, a.log, si)
		},
		ToolsFor: a.agentTools(w.cron, w.sessions),
		Channels: w.channels, Log: a.log, Version: buildVersion(),
		Restart: r.request, RestartedFrom: restartedFrom,
		SkillInstaller: func() *registry.Installer {
			in, err := a.skillInstaller(configs.DefaultAgent)
			if err != nil {
				a.log.Warn("the workbench cannot install skills", "err", err)
			}
			return in
		}(),
		CronStore: w.cron, Reload: reload, Redact: a.redact, Logs: a.logs, Platforms: platformTypes(),
		SignInLink:       readline.IsTerminal(int(os.Stderr.Fd())),
		ProviderSettings: func(c *configs.Config) map[string]providers.Settings { return providerSettings(c, si) },
		ReloadConfig: func() (*configs.Config, error) {
			next, err := configs.Load(configs.Options{Path: l.Path, Overrides: a.overrides, Platforms: platformTypes()})
			if err != nil {
				return nil, err
			}
			return &next.Config, nil
		},
	}
	if w.mcp != nil {
		opts.MCP = w.mcp
	}
	speaker, err := buildSpeaker(&l.Config, l.Paths, nil)
	if err != nil {
		a.log.Warn("voice replies are off", "err", err)
	}
	opts.Speaker = speaker
	opts.Transcription = buildTranscription(&l.Config, a.log)
	obs, stopTracing := a.startLangfuse()
	defer stopTracing()
	opts.Observer = obs
	if opts.Hooks, err = a.hooks(); err != nil {
		return err
	}
	opts.Early, handed = early, true
	return gateway.Run(ctx, opts)
}

// sandboxProbeDelay is how long after the start the sandbox is probed and
// described in the log.
const sandboxProbeDelay = 2 * time.Second

// describeSandbox logs how exec commands will be confined, and warns when
// they are not or can reach the gateway's own port.
func describeSandbox(a *app, ex configs.ExecConfig) {
	if sb := sandbox.Describe(sandbox.Mode(ex.Sandbox)); strings.HasPrefix(sb, "none") {
		a.log.Warn("exec sandbox: commands and MCP servers run unconfined; see `nanobot doctor`", "sandbox", sb)
	} else {
		a.log.Info("exec sandbox", "sandbox", sb)
	}
	if ok, why := sandbox.PortWall(sandbox.Mode(ex.Sandbox)); !ok && ex.NetworkAllowed() {
		a.log.Warn("exec commands can reach the gateway's own port; the credential check is the only wall", "reason", why)
	}
}

func newInstallServiceCmd(a *app) *cobra.Command {
	var user, dryRun bool
	var runAs string
	cmd := command("install-service", "Write a hardened systemd unit for the gateway (system or --user scope)", func(cmd *cobra.Command) error {
		bin, err := os.Executable()
		if err != nil {
			return err
		}
		if bin, err = filepath.EvalSymlinks(bin); err != nil {
			return err
		}
		unit, err := deploy.Unit(deploy.UnitOptions{Binary: bin, Config: a.loaded.Path, DataDir: a.loaded.Paths.Dir, User: user, RunAs: runAs})
		if err != nil {
			return err
		}
		target := "/etc/systemd/system/nanobot.service"
		if user {
			home, err := os.UserHomeDir()
			if err != nil {
				return err
			}
			target = filepath.Join(home, ".config", "systemd", "user", "nanobot.service")
		}
		if dryRun {
			fmt.Fprintf(cmd.OutOrStdout(), "# would write %s\n%s\n", target, unit)
			return nil
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(target, []byte(unit+"\n"), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", target, err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", target)
		scope := []string{}
		if user {
			scope = append(scope, "--user")
		}
		if _, err := exec.LookPath("systemctl"); err == nil {
			fmt.Fprintf(cmd.OutOrStdout(), "next: systemctl %sdaemon-reload && systemctl %senable --now nanobot\n", flagPrefix(scope), flagPrefix(scope))
		}
		return nil
	})
	cmd.Flags().BoolVar(&user, "user", false, "install for the current user (~/.config/systemd/user)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the unit instead of writing it")
	cmd.Flags().StringVar(&runAs, "run-as", "nanobot", "system user the service runs as (system scope)")
	return cmd
}

func flagPrefix(f []string) string {
	if len(f) == 0 {
		return ""
	}
	return f[0] + " "
}
