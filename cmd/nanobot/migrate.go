package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/spf13/cobra"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

func newMigrateCmd(a *app) *cobra.Command {
	var fromPython, write bool
	cmd := &cobra.Command{
		Use:   "migrate --from-python [--config PATH] [--write]",
		Short: "Report how a Python nanobot config.json carries over, key by key, and optionally rewrite it",
		Long: "Reads a Python nanobot config.json (default ~/.nanobot/config.json, or --config) and its workspace and\n" +
			"reports every key: carried over, changes meaning, or unsupported (with what happens instead).\n" +
			"With --write the migrated config replaces the file atomically, after a backup of the original\n" +
			"beside it (config.json.python-<time>.bak).",
		Args: cobra.NoArgs,
		// The file may not load as it is: read it raw instead of the root's
		// pre-run.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			a.stderr = cmd.ErrOrStderr()
			a.log = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !fromPython {
				return fmt.Errorf("migrate: say where from: --from-python (the only source so far)")
			}
			path := a.configPath
			if path == "" {
				path = os.Getenv("NANOBOT_CONFIG")
			}
			if path == "" {
				path = configs.DefaultPath()
			}
			return migratePython(cmd.OutOrStdout(), path, write)
		},
	}
	cmd.Flags().BoolVar(&fromPython, "from-python", false, "read a config.json written for the Python nanobot")
	cmd.Flags().BoolVar(&write, "write", false, "replace the config with the migrated one (the original is kept as a backup)")
	return cmd
}

var envRefPattern = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

func migratePython(w io.Writer, path string, write bool) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	m, err := configs.MigratePython(data, platformTypes())
	if err != nil {
		return fmt.Errorf("migrate %s: %w", path, err)
	}
	fmt.Fprintf(w, "config: %s\n\n%s", path, m.FormatReport())
	c := m.Counts()
	fmt.Fprintf(w, "\n%d key(s): %d carried over, %d change meaning, %d unsupported\n",
		len(m.Keys), c[configs.CompatSame], c[configs.CompatChanged], c[configs.CompatUnsupported])

	// The migrated file must load as it will be written (same folder, so
	// relative paths mean the same).
	tmp, err := os.CreateTemp(filepath.Dir(path), ".migrate-*.json")
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	tmpPath := tmp.Name()
	defer os.Remove(tmpPath)
	_, err = tmp.Write(m.Output)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	// Unset ${VAR}s are the user's to set before starting; they must not
	// fail this check.
	environ := os.Environ()
	for _, ref := range envRefPattern.FindAllStringSubmatch(string(m.Output), -1) {
		if _, ok := os.LookupEnv(ref[1]); !ok {
			environ = append(environ, ref[1]+"=unset-"+ref[1])
		}
	}
	l, err := configs.Load(configs.Options{Path: tmpPath, Environ: environ, Platforms: platformTypes()})
	if err != nil {
		return fmt.Errorf("migrate: the migrated config does not load, nothing written: %w", err)
	}
	reportWorkspace(w, l.Paths.Workspace)

	if !write {
		fmt.Fprintln(w, "\nnothing written; run again with --write to replace the config (the original is kept as a backup)")
		return nil
	}
	backup := fmt.Sprintf("%s.python-%s.bak", path, time.Now().UTC().Format("20060102T150405Z"))
	if err := atomicfile.Write(backup, data, 0o600); err != nil {
		return fmt.Errorf("migrate: backup: %w", err)
	}
	if err := atomicfile.Write(path, m.Output, 0o600); err != nil {
		return fmt.Errorf("migrate: write %s: %w", path, err)
	}
	fmt.Fprintf(w, "\nwrote %s (original kept as %s)\n", path, backup)
	return nil
}

// reportWorkspace says which of the Python nanobot's workspace files are
// used here as they are.
func reportWorkspace(w io.Writer, ws string) {
	fmt.Fprintf(w, "\nworkspace: %s", ws)
	if _, err := os.Stat(ws); err != nil {
		fmt.Fprintln(w, " (missing: `nanobot onboard` creates it)")
		return
	}
	fmt.Fprintln(w)
	files := append(append([]string{}, agent.BootstrapFiles...), "HEARTBEAT.md", filepath.Join("memory", "MEMORY.md"), "skills")
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(ws, f)); err == nil {
			fmt.Fprintf(w, "  %-18s used as it is\n", f)
		}
	}
}
