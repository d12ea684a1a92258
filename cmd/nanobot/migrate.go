package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
	// Checked before anything is printed: the copy it loads from holds the
	// keys, and a reader that stops early (| head) ends this process.
	l, err := loadMigrated(path, m.Output)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "config: %s\n\n%s", path, m.FormatReport())
	c := m.Counts()
	fmt.Fprintf(w, "\n%d key(s): %d carried over, %d change meaning, %d unsupported\n",
		len(m.Keys), c[configs.CompatSame], c[configs.CompatChanged], c[configs.CompatUnsupported])
	reportWorkspace(w, l.Paths.Workspace)

	switch {
	case !write:
		fmt.Fprintln(w, "\nnothing written; run again with --write to replace the config (the original is kept as a backup)")
		return nil
	case bytes.Equal(m.Output, data):
		fmt.Fprintln(w, "\nnothing to write: the file is already as migrated")
		return nil
	}
	backup, err := writeBackup(fmt.Sprintf("%s.python-%s", path, time.Now().UTC().Format("20060102T150405Z")), data)
	if err != nil {
		return fmt.Errorf("migrate: backup: %w", err)
	}
	if err := atomicfile.Write(path, m.Output, 0o600); err != nil {
		return fmt.Errorf("migrate: write %s: %w", path, err)
	}
	fmt.Fprintf(w, "\nwrote %s (original kept as %s)\n", path, backup)
	return nil
}

// loadMigrated loads the migrated config as it will be written: from a
// file in the same folder (relative paths mean the same), removed again
// before it returns.
func loadMigrated(path string, out []byte) (*configs.Loaded, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".migrate-*.json")
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(out)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	// Unset ${VAR}s are the user's to set before starting; they must not
	// fail this check.
	environ := os.Environ()
	for _, ref := range envRefPattern.FindAllStringSubmatch(string(out), -1) {
		if _, ok := os.LookupEnv(ref[1]); !ok {
			environ = append(environ, ref[1]+"=unset-"+ref[1])
		}
	}
	l, err := configs.Load(configs.Options{Path: tmp.Name(), Environ: environ, Platforms: platformTypes()})
	if err != nil {
		return nil, fmt.Errorf("migrate: the migrated config does not load, nothing written: %w", err)
	}
	return l, nil
}

// writeBackup writes data to base+".bak", or base+"-2.bak" and so on when
// that exists: a backup never replaces another (two runs in one second
// would otherwise keep the migrated file as the "original"). The file is
// synced before it counts as written.
func writeBackup(base string, data []byte) (string, error) {
	for n := 1; ; n++ {
		name := base + ".bak"
		if n > 1 {
			name = fmt.Sprintf("%s-%d.bak", base, n)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(data)
		if serr := f.Sync(); err == nil {
			err = serr
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(name)
			return "", err
		}
		return name, nil
	}
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
