package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent/skills/registry/registrytest"
)

// runIn is run with an empty stdin, so nothing waits on a terminal.
func runIn(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(strings.NewReader(""))
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func skillsConfig(t *testing.T, url string) (cfg, ws string) {
	t.Helper()
	dir := t.TempDir()
	ws = filepath.Join(dir, "workspace")
	cfg = filepath.Join(dir, "config.json")
	data, _ := json.Marshal(map[string]any{
		"agents":    map[string]any{"defaults": map[string]any{"workspace": ws}},
		"providers": map[string]any{"openai": map[string]any{"apiKey": "sk-test-not-real"}},
		"skills":    map[string]any{"registries": []any{map[string]any{"name": "fake", "url": url}}},
	})
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, ws
}

// TestSkillsCLI: search, install, list, tamper (list and doctor report
// it), update shown then applied with --yes, remove.
func TestSkillsCLI(t *testing.T) {
	srv := registrytest.New(t)
	srv.Publish("weather", registrytest.Version{Version: "1.0.0", Archive: registrytest.Zip(t, map[string]string{
		"SKILL.md": registrytest.Skill("weather", "Forecasts"), "notes.txt": "v1"})})
	cfg, ws := skillsConfig(t, srv.URL)

	out, err := runIn(t, "skills", "search", "weather", "--config", cfg)
	if err != nil || !strings.Contains(out, "weather 1.0.0 [fake]") {
		t.Fatalf("search: %v\n%s", err, out)
	}
	if out, err = runIn(t, "skills", "install", "weather@1.0.0", "--config", cfg); err != nil || !strings.Contains(out, "Installed weather 1.0.0 from fake") {
		t.Fatalf("install: %v\n%s", err, out)
	}
	if out, err = runIn(t, "skills", "list", "--config", cfg); err != nil || !strings.Contains(out, "registry 1.0.0") {
		t.Fatalf("list: %v\n%s", err, out)
	}

	// Tampering: the skill is skipped and doctor names it.
	notes := filepath.Join(ws, "skills", "weather", "notes.txt")
	os.WriteFile(notes, []byte("changed"), 0o644)
	out, _ = runIn(t, "skills", "list", "--config", cfg)
	if strings.Contains(out, "registry 1.0.0") || !strings.Contains(out, "differ from the installed version") {
		t.Fatalf("list after tampering:\n%s", out)
	}
	out, err = runIn(t, "doctor", "--config", cfg)
	if err == nil || !strings.Contains(out, "skill "+filepath.Join(ws, "skills", "weather")+" was changed after it was installed") {
		t.Fatalf("doctor after tampering: %v\n%s", err, out)
	}
	os.WriteFile(notes, []byte("v1"), 0o644)

	// An update is shown first and applied only when asked.
	srv.Publish("weather", registrytest.Version{Version: "1.1.0", Archive: registrytest.Zip(t, map[string]string{
		"SKILL.md": registrytest.Skill("weather", "Forecasts"), "notes.txt": "v2", "extra.md": "more"})})
	out, err = runIn(t, "skills", "update", "--config", cfg)
	if err != nil || !strings.Contains(out, "weather: 1.0.0 → 1.1.0 (fake)") || !strings.Contains(out, "+ extra.md") ||
		!strings.Contains(out, "~ notes.txt") || !strings.Contains(out, "weather not changed") {
		t.Fatalf("update without --yes: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(notes); string(b) != "v1" {
		t.Fatalf("update without --yes changed notes.txt to %q", b)
	}
	if out, err = runIn(t, "skills", "update", "weather", "--yes", "--config", cfg); err != nil || !strings.Contains(out, "Updated weather to 1.1.0") {
		t.Fatalf("update --yes: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(notes); string(b) != "v2" {
		t.Fatalf("after update notes.txt is %q", b)
	}

	if out, err = runIn(t, "skills", "remove", "weather", "--config", cfg); err != nil {
		t.Fatalf("remove: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(ws, "skills", "weather")); !os.IsNotExist(err) {
		t.Fatalf("skills/weather still there after remove (%v)", err)
	}
}

// TestSkillsRegistryDown: a registry that does not answer is named in the
// error.
func TestSkillsRegistryDown(t *testing.T) {
	cfg, _ := skillsConfig(t, "http://127.0.0.1:1")
	_, err := runIn(t, "skills", "search", "x", "--config", cfg)
	if err == nil || !strings.Contains(err.Error(), "registry fake (http://127.0.0.1:1) is unavailable") {
		t.Fatalf("got %v", err)
	}
}

// TestSkillsCLIModeration: the registry's verdicts reach the person
// installing: a skill flagged as malware is refused with the reason, a
// suspicious one is installed with a warning.
func TestSkillsCLIModeration(t *testing.T) {
	srv := registrytest.New(t)
	for _, slug := range []string{"stealer", "odd"} {
		srv.Publish(slug, registrytest.Version{Version: "1.0.0", Archive: registrytest.Zip(t, map[string]string{"SKILL.md": registrytest.Skill(slug, "S")})})
	}
	srv.Flag("stealer", registrytest.Moderation{MalwareBlocked: true})
	srv.Flag("odd", registrytest.Moderation{Suspicious: true})
	cfg, ws := skillsConfig(t, srv.URL)
	if out, err := runIn(t, "skills", "install", "stealer", "--config", cfg); err == nil || !strings.Contains(err.Error(), "flagged as malware by the registry fake") {
		t.Errorf("install of a blocked skill: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(ws, "skills", "stealer")); !os.IsNotExist(err) {
		t.Errorf("skills/stealer: %v, want none", err)
	}
	if out, err := runIn(t, "skills", "install", "odd", "--config", cfg); err != nil || !strings.Contains(out, "Warning: fake flags odd as suspicious") {
		t.Errorf("install of a suspicious skill: %v\n%s", err, out)
	}
}
