package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestChannelsLogin(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"channels": {"discord": {"token": "x"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, "channels", "login", "nosuch", "--config", cfg); err == nil || !strings.Contains(err.Error(), "unknown channel") {
		t.Errorf("unknown channel: %v", err)
	}
	if _, _, err := run(t, "channels", "login", "discord", "--config", cfg); err == nil || !strings.Contains(err.Error(), "needs no interactive login") {
		t.Errorf("discord: %v", err)
	}
}
