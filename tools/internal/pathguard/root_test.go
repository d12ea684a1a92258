package pathguard

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenAfterSwap plays the race deterministically: the path is checked
// while "box" is a folder, then "box" becomes a symlink out of the
// workspace before the file is opened.
func TestOpenAfterSwap(t *testing.T) {
	ws, outside := layout(t)
	must(t, os.MkdirAll(filepath.Join(ws, "box"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, "box", "secret"), []byte("inside"), 0o644))
	g, err := New(ws, true)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := g.Open("box/secret")
	if err != nil {
		t.Fatal(err)
	}
	defer loc.Root.Close()
	if loc.Name != filepath.Join("box", "secret") || loc.Real != filepath.Join(ws, "box", "secret") {
		t.Fatalf("got name %q real %q", loc.Name, loc.Real)
	}
	must(t, os.Rename(filepath.Join(ws, "box"), filepath.Join(ws, "box.old")))
	must(t, os.Symlink(outside, filepath.Join(ws, "box")))

	for name, op := range map[string]func() error{
		"open":  func() error { f, err := loc.Root.OpenFile(loc.Name, os.O_RDONLY, 0); f.Close(); return err },
		"stat":  func() error { _, err := loc.Root.Stat(loc.Name); return err },
		"mkdir": func() error { return loc.Root.MkdirAll(filepath.Join("box", "new"), 0o755) },
		"create": func() error {
			f, err := loc.Root.OpenFile(filepath.Join("box", "new.txt"), os.O_WRONLY|os.O_CREATE, 0o644)
			f.Close()
			return err
		},
	} {
		err := loc.Check(op())
		var race *RaceError
		if !errors.As(err, &race) {
			t.Errorf("%s: got %v, want a *RaceError", name, err)
			continue
		}
		if !strings.Contains(err.Error(), `"box/secret" changed while it was being opened`) {
			t.Errorf("%s: error %q does not explain the refusal", name, err)
		}
	}
	for _, p := range []string{"new", "new.txt"} {
		if _, err := os.Lstat(filepath.Join(outside, p)); err == nil {
			t.Errorf("%s was created outside the workspace", p)
		}
	}
}

func TestOpenUnrestricted(t *testing.T) {
	ws, outside := layout(t)
	g, err := New(ws, false)
	if err != nil {
		t.Fatal(err)
	}
	loc, err := g.Open("out/secret")
	if err != nil {
		t.Fatal(err)
	}
	defer loc.Root.Close()
	f, err := loc.Root.OpenFile(loc.Name, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if loc.Real != filepath.Join(outside, "secret") {
		t.Errorf("got %s, want the file outside", loc.Real)
	}
}

func TestOpenAllowedDir(t *testing.T) {
	ws, outside := layout(t)
	g, err := New(ws, true, outside)
	if err != nil {
		t.Fatal(err)
	}
	// Through the workspace's symlink into the allowed folder: the handle
	// is on the allowed folder, and the name has no symlink left.
	loc, err := g.Open("out/secret")
	if err != nil {
		t.Fatal(err)
	}
	defer loc.Root.Close()
	if loc.Name != "secret" {
		t.Errorf("got name %q, want secret (relative to the allowed folder)", loc.Name)
	}
	if _, err := loc.Root.Stat(loc.Name); err != nil {
		t.Error(err)
	}
}
