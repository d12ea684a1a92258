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
	for _, want := range []string{"readable by other users", "channels.telegram.allowFrom", "restrictToWorkspace is off", `sandbox is "none"`, "beyond loopback",
		"[RISK] channels.telegram: token: required (get one from @BotFather): the gateway does not start while channels.telegram is enabled"} {
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

func TestDoctorVoiceReplies(t *testing.T) {
	tests := []struct {
		name, tts, want string
		path            string // PATH for the ffmpeg lookup
	}{
		{"opus", `{"enabled": true}`, "sends Ogg/Opus, sent as is", ""},
		{"mp3 without ffmpeg", `{"enabled": true, "format": "mp3"}`, `tts.format is "mp3" but voice messages need Ogg/Opus and ffmpeg is not installed`, ""},
		{"mp3 with ffmpeg", `{"enabled": true, "format": "mp3"}`, `tts.format "mp3" is converted to Ogg/Opus with`, "ffmpeg"},
		{"no endpoint", `{"enabled": true, "provider": "vllm"}`, `provider "vllm" has no apiBase`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin := t.TempDir()
			if tt.path != "" {
				if err := os.WriteFile(filepath.Join(bin, "ffmpeg"), []byte("#!/bin/sh\n"), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("PATH", bin)
			cfg := filepath.Join(t.TempDir(), "config.json")
			body := `{"providers": {"openai": {"apiKey": "sk-x-123456"}}, "tts": ` + tt.tts + `}`
			if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			out, _, _ := run(t, "doctor", "--config", cfg)
			if !strings.Contains(out, tt.want) {
				t.Errorf("doctor output lacks %q:\n%s", tt.want, out)
			}
		})
	}
}
