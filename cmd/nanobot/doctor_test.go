package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDoctor(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	body := `{"providers": {"openai": {"apiKey": "sk-x-123456"}}, "channels": {"telegram": {"enabled": true, "allowFrom": ["*"]}},
	  "tools": {"restrictToWorkspace": false, "exec": {"sandbox": "none"}}, "gateway": {"host": "0.0.0.0"}}`
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "doctor", "--config", cfg)
	if err == nil {
		t.Error("risks found but doctor exited 0")
	}
	for _, want := range []string{"readable by other users", "channels.telegram.allowFrom", "restrictToWorkspace is off", `sandbox is "none"`, "beyond loopback"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sk-x-123456") {
		t.Error("doctor printed a key")
	}

	safe := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(safe, []byte(`{"providers": {"openai": {"apiKey": "sk-x-123456"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err = run(t, "doctor", "--config", safe)
	if err != nil || strings.Contains(out, "RISK") {
		t.Errorf("safe config: %v\n%s", err, out)
	}
}

func TestDoctorReportsFailingMCPServers(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	body := `{"providers": {"openai": {"apiKey": "sk-x-123456"}}, "tools": {"mcpServers": {
	  "broken": {"command": "/nonexistent/mcp-server"},
	  "gone": {"url": "http://127.0.0.1:1/mcp", "type": "streamableHttp"}}}}`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, _ := run(t, "doctor", "--config", cfg)
	for _, want := range []string{"MCP server broken (stdio) fails to start", "MCP server gone (streamableHttp) fails to start", "check tools.mcpServers.broken"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
}
