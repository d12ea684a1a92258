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
  "agents": {"defaults": {"model": "deepseek-chat", "workspace": "` + filepath.Join(dir, "ws") + `", "idleCompactAfterMinutes": 30, "memoryWindow": 50}},
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
		"agents.defaults.memoryWindow — no such option here, left out of the migrated file",
		"nothing written",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".migrate-*")); len(left) != 0 {
		t.Errorf("the report left copies of the config: %v", left)
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
	// Run again: nothing left to change, and the original's backup stays.
	out, _, err = run(t, "migrate", "--from-python", "--config", path, "--write")
	if err != nil || !strings.Contains(out, "nothing to write") {
		t.Errorf("a second --write: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(backups[0]); !bytes.Equal(b, orig) {
		t.Error("a second --write replaced the backup of the original")
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

// A backup never replaces another: two runs in one second get two names.
func TestWriteBackupNeverReplaces(t *testing.T) {
	base := filepath.Join(t.TempDir(), "config.json.python-20261206T000000Z")
	first, err := writeBackup(base, []byte("original"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := writeBackup(base, []byte("migrated"))
	if err != nil {
		t.Fatal(err)
	}
	if first == second {
		t.Fatalf("both backups are %s", first)
	}
	if b, _ := os.ReadFile(first); string(b) != "original" {
		t.Errorf("the first backup holds %q", b)
	}
	if fi, err := os.Stat(second); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("second backup: %v %v", err, fi)
	}
}
