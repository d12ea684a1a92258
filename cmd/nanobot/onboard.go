package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nanobot-go/nanobot/agent/templates"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

func newOnboardCmd(a *app) *cobra.Command {
	var wizardOn, refresh bool
	cmd := command("onboard", "Create the config file and workspace if missing (never overwrites); --wizard asks and checks as it goes", func(cmd *cobra.Command) error {
		out := cmd.OutOrStdout()
		if wizardOn || refresh {
			return runWizard(cmd.Context(), a, cmd.InOrStdin(), out, refresh)
		}
		l := a.loaded
		switch {
		case !l.Exists:
			if err := atomicfile.Write(l.Path, configs.Example, 0o600); err != nil {
				return fmt.Errorf("write %s: %w", l.Path, err)
			}
			fmt.Fprintf(out, "created config %s\n", l.Path)
			// Reload so the workspace path comes from the file just written.
			reloaded, err := configs.Load(configs.Options{Path: l.Path, Overrides: a.overrides, Platforms: platformTypes()})
			if err != nil {
				return err
			}
			l = reloaded
		case len(l.Migrated) > 0:
			// Never rewritten here: the Python nanobot may share this file and
			// read keys this program drops. migrate --write keeps a backup.
			fmt.Fprintf(out, "config %s exists, left as is; it has keys in older places, read from there:\n", l.Path)
			for _, m := range l.Migrated {
				fmt.Fprintf(out, "  %s\n", m)
			}
			fmt.Fprintln(out, "  (`nanobot migrate --from-python --write` moves them, keeping a backup of the file)")
		default:
			fmt.Fprintf(out, "config %s exists, left as is\n", l.Path)
		}
		if err := l.Paths.Ensure(); err != nil {
			return err
		}
		created, err := templates.Sync(l.Paths.Workspace)
		if err != nil {
			return err
		}
		for _, c := range created {
			fmt.Fprintf(out, "created %s\n", c)
		}
		fmt.Fprintf(out, "workspace %s is ready\n", l.Paths.Workspace)
		if !l.Exists {
			fmt.Fprintf(out, "next: add a provider key to %s (or export ANTHROPIC_API_KEY), then run `nanobot gateway`\n", l.Path)
		}
		return nil
	})
	cmd.Flags().BoolVar(&wizardOn, "wizard", false, "guided setup: provider and key (checked live), channels (tokens checked), workbench password")
	cmd.Flags().BoolVar(&refresh, "refresh", false, "with --wizard: walk an existing config, keep what is set, fill in what is missing")
	return cmd
}
