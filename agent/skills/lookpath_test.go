package skills

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPathSearchesFollowInstalls keeps the PATH searches of exec.LookPath
// between scans and still sees a program installed or removed in a
// folder on PATH at the next scan.
func TestPathSearchesFollowInstalls(t *testing.T) {
	bin := t.TempDir()
	t.Setenv("PATH", bin)
	ws := t.TempDir()
	writeSkill(t, ws, "tool", skillDoc("description: Needs nbctl.\nrequires: {bins: [nbctl]}", "Body."))
	l := New(Options{Workspace: ws, NoBuiltin: true})
	available := func() bool {
		_, idx := l.Prompt()
		if !strings.Contains(idx, `name="tool"`) {
			t.Fatalf("skill not listed:\n%s", idx)
		}
		return strings.Contains(idx, `name="tool" available="true"`)
	}
	if available() {
		t.Fatal("available before nbctl is installed")
	}
	if found, kept := l.paths.found["nbctl"]; !kept || found || l.paths.path != bin {
		t.Fatalf("the search was not kept: %+v", l.paths)
	}
	prog := filepath.Join(bin, "nbctl")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if available() {
		t.Fatal("PATH's folders looked at again within pathRecheck")
	}
	later := func() { l.paths.checked = l.paths.checked.Add(-pathRecheck) }
	later()
	if !available() {
		t.Fatal("nbctl installed on PATH, skill still unavailable")
	}
	if err := os.Remove(prog); err != nil {
		t.Fatal(err)
	}
	later()
	if available() {
		t.Fatal("nbctl removed, skill still available")
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "nbctl"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+other)
	if !available() {
		t.Fatal("PATH changed to a folder with nbctl, skill still unavailable")
	}
}
