package templates

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestSyncCreatesMissingOnly(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	created, err := Sync(ws)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md", "HEARTBEAT.md", "memory/MEMORY.md", "memory/HISTORY.md", "skills/"} {
		if !slices.Contains(created, want) {
			t.Errorf("created %v, missing %s", created, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(ws, "memory", "HISTORY.md")); err != nil || fi.Size() != 0 {
		t.Errorf("HISTORY.md: want empty file, got %v %v", fi, err)
	}

	// A user edit survives, and a second sync creates nothing.
	soul := filepath.Join(ws, "SOUL.md")
	if err := os.WriteFile(soul, []byte("my own soul"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(ws, "USER.md")); err != nil {
		t.Fatal(err)
	}
	created, err = Sync(ws)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(created, []string{"USER.md"}) {
		t.Errorf("second sync created %v, want only USER.md", created)
	}
	if b, _ := os.ReadFile(soul); string(b) != "my own soul" {
		t.Errorf("SOUL.md overwritten: %q", b)
	}
	created, err = Sync(ws)
	if err != nil || len(created) != 0 {
		t.Errorf("third sync created %v (err %v), want nothing", created, err)
	}
}
