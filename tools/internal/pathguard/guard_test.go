package pathguard

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// layout builds: ws/{sub/file.txt, in -> sub, out -> outside, loop -> loop,
// deep -> out/inner}; outside/{secret, inner/}.
func layout(t *testing.T) (ws, outside string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws = filepath.Join(base, "ws")
	outside = filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(ws, "sub"), filepath.Join(outside, "inner")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.WriteFile(filepath.Join(ws, "sub", "file.txt"), []byte("x"), 0o644))
	must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644))
	must(t, os.Symlink("sub", filepath.Join(ws, "in")))
	must(t, os.Symlink(outside, filepath.Join(ws, "out")))
	must(t, os.Symlink("loop", filepath.Join(ws, "loop")))
	must(t, os.Symlink("out/inner", filepath.Join(ws, "deep")))
	return ws, outside
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestResolveRestricted(t *testing.T) {
	ws, outside := layout(t)
	g, err := New(ws, true)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path    string
		want    string // resolved; empty when refused
		refused bool
	}{
		{path: "sub/file.txt", want: filepath.Join(ws, "sub", "file.txt")},
		{path: ".", want: ws},
		{path: "", want: ws},
		{path: "in/file.txt", want: filepath.Join(ws, "sub", "file.txt")},
		{path: "new/dir/file.txt", want: filepath.Join(ws, "new", "dir", "file.txt")},
		{path: "sub/../sub/file.txt", want: filepath.Join(ws, "sub", "file.txt")},
		{path: "~/sub", want: filepath.Join(ws, "sub")},
		{path: filepath.Join(ws, "sub"), want: filepath.Join(ws, "sub")},
		{path: "..", refused: true},
		{path: "../outside/secret", refused: true},
		{path: "sub/../../outside", refused: true},
		{path: "/etc/passwd", refused: true},
		{path: "out/secret", refused: true},
		{path: "out", refused: true},
		{path: "out/not-yet-there", refused: true},
		{path: "deep", refused: true},
		// ".." after a symlink applies to the link's target, as in the kernel:
		// in -> sub, so in/.. is ws (inside) ...
		{path: "in/../sub", want: filepath.Join(ws, "sub")},
		// ... and out/inner/.. is outside, even though lexically it is ws/out.
		{path: "deep/../secret", refused: true},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := g.Resolve(tt.path)
			if tt.refused {
				var oe *OutsideError
				if !errors.As(err, &oe) {
					t.Fatalf("Resolve(%q) = %q, %v; want an OutsideError", tt.path, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Resolve(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
			}
		})
	}
	if _, err := g.Resolve("loop/x"); err == nil {
		t.Error("Resolve(loop/x): want a too-many-links error")
	}
	_ = outside
}

func TestResolveUnrestrictedAndExtraRoots(t *testing.T) {
	ws, outside := layout(t)
	g, err := New(ws, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := g.Resolve("out/secret")
	if err != nil || got != filepath.Join(outside, "secret") {
		t.Errorf("unrestricted Resolve(out/secret) = %q, %v", got, err)
	}
	g2, err := New(ws, true, outside)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g2.Resolve("out/secret"); err != nil {
		t.Errorf("allowed dir: Resolve(out/secret) = %v", err)
	}
	if _, err := g2.Resolve("/etc/passwd"); err == nil {
		t.Error("allowed dir: /etc/passwd should still be refused")
	}
	if got := g2.Display(filepath.Join(ws, "sub", "file.txt")); got != filepath.Join("sub", "file.txt") {
		t.Errorf("Display() = %q", got)
	}
}
