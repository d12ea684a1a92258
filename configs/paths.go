package configs

import (
	"os"
	"path/filepath"
	"strings"
)

// DefaultPath is ~/.nanobot/config.json (or ./.nanobot/config.json when the
// home folder is unknown).
func DefaultPath() string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return filepath.Join(".nanobot", "config.json")
	}
	return filepath.Join(home, ".nanobot", "config.json")
}

// Paths are the folders of one instance. All derive from the config file's
// folder, so two config files are two fully separate instances.
type Paths struct {
	// ConfigFile is the config file (it may not exist yet).
	ConfigFile string
	// Dir is the config file's folder: the instance's data folder.
	Dir string
	// Workspace is the agent's workspace.
	Workspace string
	// Sessions holds one JSONL file per conversation.
	Sessions string
	// Cron holds jobs.json.
	Cron string
	// Media holds downloaded attachments.
	Media string
	// Logs holds log files.
	Logs string
	// State holds small runtime state (pairings, tokens, inbox journal).
	State string
}

// PathsFor derives an instance's folders from its config file and config.
func PathsFor(configFile string, c *Config) Paths {
	abs, err := filepath.Abs(configFile)
	if err == nil {
		configFile = abs
	}
	dir := filepath.Dir(configFile)
	return Paths{
		ConfigFile: configFile,
		Dir:        dir,
		Workspace:  resolveWorkspace(dir, c.Agents.Defaults.Workspace),
		Sessions:   filepath.Join(dir, "sessions"),
		Cron:       filepath.Join(dir, "cron"),
		Media:      filepath.Join(dir, "media"),
		Logs:       filepath.Join(dir, "logs"),
		State:      filepath.Join(dir, "state"),
	}
}

func resolveWorkspace(dir, ws string) string {
	switch {
	case ws == "":
		return filepath.Join(dir, "workspace")
	case ws == "~" || strings.HasPrefix(ws, "~/"):
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, strings.TrimPrefix(ws, "~"))
		}
		return filepath.Join(dir, strings.TrimPrefix(ws, "~"))
	case filepath.IsAbs(ws):
		return filepath.Clean(ws)
	default:
		return filepath.Join(dir, ws)
	}
}

// Ensure creates the instance folders (0700) that do not exist yet.
func (p Paths) Ensure() error {
	for _, d := range []string{p.Dir, p.Workspace, p.Sessions, p.Cron, p.Media, p.Logs, p.State} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// ExpandHome replaces a leading "~" with the home folder.
func ExpandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(home, strings.TrimPrefix(p, "~"))
}
