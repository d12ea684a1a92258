package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/nanobot-go/nanobot/configs"
)

// TestWebUISetPassword: the password's bcrypt hash lands in config.json
// (0600), the password itself nowhere, and ${VAR} references survive.
func TestWebUISetPassword(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	t.Setenv("TEST_SETPW_KEY", "sk-from-the-environment-123")
	// A config variable must not be written into the file.
	t.Setenv("NANOBOT_AGENTS__DEFAULTS__MODEL", "openai/from-the-env-var")
	cfg := `{"providers": {"openai": {"apiKey": "${TEST_SETPW_KEY}"}}}`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	const pw = "a long enough password"
	cmd := newRootCmd()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(strings.NewReader(pw + "\n"))
	cmd.SetArgs([]string{"--config", path, "webui", "set-password"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("set-password: %v (%s)", err, out.String())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), pw) || strings.Contains(string(raw), "sk-from-the-environment-123") {
		t.Fatalf("config.json holds the password or an expanded secret:\n%s", raw)
	}
	if strings.Contains(string(raw), "from-the-env-var") {
		t.Errorf("a NANOBOT_ variable was written into config.json:\n%s", raw)
	}
	if !strings.Contains(string(raw), "${TEST_SETPW_KEY}") {
		t.Errorf("the ${VAR} reference was lost:\n%s", raw)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("config.json mode %v, want 0600", fi.Mode().Perm())
	}
	l, err := configs.Load(configs.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if bcrypt.CompareHashAndPassword([]byte(l.Config.Gateway.WebUI.Password), []byte(pw)) != nil {
		t.Error("gateway.webui.password is not the password's hash")
	}

	cmd = newRootCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(strings.NewReader("short\n"))
	cmd.SetArgs([]string{"--config", path, "webui", "set-password"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "at least") {
		t.Errorf("a short password: %v, want refused", err)
	}
}
