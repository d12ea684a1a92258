package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/configs"
)

func TestMigrateFromPythonWrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	orig := []byte(`{
  "agents": {"defaults": {"model": "deepseek-chat", "workspace": "` + filepath.Join(dir, "ws") + `", "idleCompactAfterMinutes": 30}},
  "providers": {"deepseek": {"api_key": "${MIGRATE_TEST_KEY}"}},
  "channels": {"email": {"enabled": false, "postAction": "move", "postActionMoveMailbox": "Archive"}},
  "tools": {"mcpServers": {"notion": {"url": "https://mcp.example.org/mcp", "auth": "oauth"}}}
}`)
	if err := os.WriteFile(path, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "ws", "memory"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "ws", "SOUL.md"), []byte("be kind"), 0o600)
	os.WriteFile(filepath.Join(dir, "ws", "memory", "MEMORY.md"), []byte("facts"), 0o600)

	// Without --write nothing changes.
	out, _, err := run(t, "migrate", "--from-python", "--config", path)
	if err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) {
		t.Fatal("the config changed without --write")
	}
	for _, want := range []string{
		"  agents.defaults.idleCompactAfterMinutes\n", // carried over: idle compaction
		"  tools.mcpServers.notion.auth\n",            // carried over: nanobot mcp login
		"channels.email.postActionMoveMailbox — carried over as moveTo",
		"SOUL.md", "used as it is", filepath.Join("memory", "MEMORY.md"),
		"nothing written",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}

	out, _, err = run(t, "migrate", "--from-python", "--config", path, "--write")
	if err != nil {
		t.Fatal(err)
	}
	backups, _ := filepath.Glob(path + ".python-*.bak")
	if len(backups) != 1 {
		t.Fatalf("backups: %v\n%s", backups, out)
	}
	if b, _ := os.ReadFile(backups[0]); !bytes.Equal(b, orig) {
		t.Error("the backup is not the original")
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("written config: %v, mode %v (want 0600: it holds keys)", err, fi.Mode())
	}
	written, _ := os.ReadFile(path)
	if !strings.Contains(string(written), `"${MIGRATE_TEST_KEY}"`) {
		t.Errorf("the ${VAR} reference was not kept:\n%s", written)
	}
	t.Setenv("MIGRATE_TEST_KEY", "sk-test")
	l, err := configs.Load(configs.Options{Path: path, Platforms: platformTypes()})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Warnings) != 0 || len(l.Compat) != 0 {
		t.Errorf("the migrated config still warns: %q", l.Warnings)
	}
	if p := l.Config.Providers["deepseek"]; p.APIKey != "sk-test" {
		t.Errorf("deepseek key = %q", p.APIKey)
	}
}

func TestMigrateNeedsASource(t *testing.T) {
	if _, _, err := run(t, "migrate", "--config", filepath.Join(t.TempDir(), "none.json")); err == nil || !strings.Contains(err.Error(), "--from-python") {
		t.Errorf("err = %v", err)
	}
}
