package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/nanobot-go/nanobot/tools/browser"

	"github.com/spf13/cobra"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/logging"
	"github.com/nanobot-go/nanobot/internal/redact"
	"github.com/nanobot-go/nanobot/providers/auth"
	"github.com/nanobot-go/nanobot/tools/approval"
)

// app is what every subcommand gets after the root's pre-run: the loaded
// config and a logger.
type app struct {
	configPath string
	logLevel   string
	logFormat  string
	// overrides are flag values applied over the config (dotted paths).
	overrides map[string]any
	flagPaths []flagPath

	loaded *configs.Loaded
	log    *slog.Logger
	// redact masks the config's secrets and tokens learnt at run time; the
	// logger, the channel adapters, tool results and replies share it.
	redact *redact.Redactor
	// logs keeps the last log lines for the workbench's log view.
	logs   *logging.Ring
	stderr io.Writer
	// auth is the sign-in manager, built on first use (signIn).
	auth *auth.Manager
	// approvals asks the owner before risky commands (the gateway only;
	// nil when tools.exec.approval is off).
	approvals *approval.Broker
	// browser owns the browser tool's Chromium (nil when the tool is off
	// or no Chromium is found); wire builds it, its closers close it.
	browser *browser.Browser
}

func newRootCmd() *cobra.Command {
	a := &app{overrides: map[string]any{}, stderr: os.Stderr}
	root := &cobra.Command{
		Use:           "nanobot",
		Short:         "A personal AI assistant for your chats, in one binary",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return a.load(cmd)
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.configPath, "config", "", "config file (default ~/.nanobot/config.json); every other path derives from its folder")
	pf.StringVar(&a.logLevel, "log-level", "", "log level: debug, info, warn, error (default from config, else info)")
	pf.StringVar(&a.logFormat, "log-format", "", "log format: text or json (default from config, else text)")

	root.AddCommand(
		newOnboardCmd(a),
		newStatusCmd(a),
		newUsageCmd(a),
		newVersionCmd(a),
		newAgentCmd(a),
		newGatewayCmd(a),
		newPairingCmd(a),
		newCronCmd(a),
		newDoctorCmd(a),
		newChannelsCmd(a),
		newWebUICmd(a),
		newProviderCmd(a),
		newMCPCmd(a),
		newMigrateCmd(a),
		newSkillsCmd(a),
		newPluginsCmd(a),
		newApprovalsCmd(a),
	)
	return root
}

// flagOverrides maps command flags to config paths: a flag the user set
// overrides the config value (the last layer of configs.Load).
func (a *app) flagOverrides(cmd *cobra.Command, paths map[string]string) {
	a.flagPaths = append(a.flagPaths, flagPath{cmd: cmd, paths: paths})
}

type flagPath struct {
	cmd   *cobra.Command
	paths map[string]string
}

// load reads the config and builds the logger. It runs before every
// subcommand, so a broken config stops every command with one line naming
// the file and the JSON path.
func (a *app) load(cmd *cobra.Command) error {
	a.stderr = cmd.ErrOrStderr()
	path := a.configPath
	if path == "" {
		path = os.Getenv("NANOBOT_CONFIG")
	}
	if a.logLevel != "" {
		a.overrides["log.level"] = a.logLevel
	}
	if a.logFormat != "" {
		a.overrides["log.format"] = a.logFormat
	}
	for _, fp := range a.flagPaths {
		if fp.cmd != cmd {
			continue
		}
		for flag, path := range fp.paths {
			if f := cmd.Flags().Lookup(flag); f != nil && f.Changed {
				switch f.Value.Type() {
				case "int":
					n, _ := cmd.Flags().GetInt(flag)
					a.overrides[path] = n
				case "bool":
					b, _ := cmd.Flags().GetBool(flag)
					a.overrides[path] = b
				default:
					a.overrides[path] = f.Value.String()
				}
			}
		}
	}
	loaded, err := configs.Load(configs.Options{Path: path, Overrides: a.overrides, Platforms: platformTypes()})
	if err != nil {
		return err
	}
	a.loaded = loaded
	a.logs = logging.NewRing(1000)
	log, red, err := logging.New(a.stderr, logging.Options{
		Ring:    a.logs,
		Level:   loaded.Config.Log.Level,
		Format:  loaded.Config.Log.Format,
		Secrets: loaded.Config.Secrets(),
	})
	if err != nil {
		return fmt.Errorf("logging: %w", err)
	}
	a.log, a.redact = log, red
	for _, w := range loaded.Warnings {
		log.Warn("config: "+w, "file", loaded.Path)
	}
	return nil
}
