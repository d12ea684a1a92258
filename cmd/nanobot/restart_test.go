package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/gateway"
)

// TestRestartOrigin: the record a restart leaves is read once; a stale or
// damaged one is dropped (and removed) rather than greeting a chat hours
// later.
func TestRestartOrigin(t *testing.T) {
	dir := t.TempDir()
	write := func(o gateway.RestartOrigin) {
		b, _ := json.Marshal(o)
		if err := os.WriteFile(filepath.Join(dir, restartFile), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if takeRestartOrigin(dir) != nil {
		t.Error("an origin without a record")
	}
	write(gateway.RestartOrigin{Channel: "telegram", ChatID: "1", At: time.Now()})
	if o := takeRestartOrigin(dir); o == nil || o.ChatID != "1" {
		t.Errorf("fresh record: %+v", o)
	}
	if takeRestartOrigin(dir) != nil {
		t.Error("the record was read twice")
	}
	write(gateway.RestartOrigin{Channel: "telegram", ChatID: "1", At: time.Now().Add(-time.Hour)})
	if takeRestartOrigin(dir) != nil {
		t.Error("a stale record greeted the chat")
	}
	if err := os.WriteFile(filepath.Join(dir, restartFile), []byte("{garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if takeRestartOrigin(dir) != nil {
		t.Error("a damaged record was used")
	}
	if _, err := os.Stat(filepath.Join(dir, restartFile)); err == nil {
		t.Error("a dropped record was left behind")
	}
}
