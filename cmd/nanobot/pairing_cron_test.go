package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/gateway/relay"
)

func TestPairingApproveCLI(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	store := relay.NewPairingStore(filepath.Join(dir, "state", "pairing.json"))
	code, _, err := store.Request("telegram", "5|bob", "5")
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "pairing", "list", "--config", cfg)
	if err != nil || !strings.Contains(out, code) {
		t.Fatalf("list: %q %v", out, err)
	}
	if _, _, err := run(t, "pairing", "approve", "NOPE-NOPE", "--config", cfg); err == nil {
		t.Error("unknown code approved")
	}
	out, _, err = run(t, "pairing", "approve", strings.ToLower(code), "--config", cfg)
	if err != nil || !strings.Contains(out, "approved 5|bob on telegram") {
		t.Fatalf("approve: %q %v", out, err)
	}
	if !store.IsApproved("telegram", "5|bob") {
		t.Error("approval not visible to the gateway's store")
	}
}

func TestCronCLI(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.json")
	out, _, err := run(t, "cron", "add", "--config", cfg, "--channel", "telegram", "--to", "42", "-m", "standup", "--cron", "0 9 * * 1-5", "--tz", "Europe/Berlin")
	if err != nil || !strings.Contains(out, "Scheduled job") {
		t.Fatalf("add: %q %v", out, err)
	}
	if _, _, err := run(t, "cron", "add", "--config", cfg, "--channel", "telegram", "--to", "42", "-m", "x", "--every", "5"); err == nil {
		t.Error("an interval under 60 s was accepted")
	}
	out, _, _ = run(t, "cron", "list", "--config", cfg)
	if !strings.Contains(out, "standup") || !strings.Contains(out, "telegram:42") {
		t.Fatalf("list: %q", out)
	}
	id := strings.Fields(out)[0]
	if _, _, err := run(t, "cron", "remove", id, "--config", cfg); err != nil {
		t.Fatal(err)
	}
	out, _, _ = run(t, "cron", "list", "--config", cfg)
	if !strings.Contains(out, "no jobs") {
		t.Errorf("after remove: %q", out)
	}
}
