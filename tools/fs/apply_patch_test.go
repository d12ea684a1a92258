package fs

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nanobot-go/nanobot/tools/internal/pathguard"
)

func edit(path, action, oldText, newText string) map[string]any {
	e := map[string]any{"path": path, "action": action, "new_text": newText}
	if oldText != "" {
		e["old_text"] = oldText
	}
	return e
}

func patchArgs(edits ...map[string]any) map[string]any {
	list := make([]any, len(edits))
	for i, e := range edits {
		list[i] = e
	}
	return map[string]any{"edits": list}
}

// snapshot maps every file under dir (relative, slash-separated) to its
// content, and every folder to "<dir>".
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			out[rel] = "<link>"
		case d.IsDir():
			out[rel] = "<dir>"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestApplyPatch(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		edits   []map[string]any
		want    map[string]string // files after, only those named
		wantMsg string
		wantErr string // the whole patch is refused, nothing changes
	}{
		{name: "two files", files: map[string]string{"a.go": "package a\n\nfunc A() int { return 1 }\n", "b.md": "# B\n"},
			edits: []map[string]any{edit("a.go", "replace", "return 1", "return 2"), edit("b.md", "add", "", "more")},
			want:  map[string]string{"a.go": "package a\n\nfunc A() int { return 2 }\n", "b.md": "# B\nmore\n"}, wantMsg: "Patch applied (2 edits, 2 files)"},
		{name: "same file in sequence", files: map[string]string{"f.txt": "one\ntwo\nthree\n"},
			edits: []map[string]any{edit("f.txt", "replace", "one", "ONE"), edit("f.txt", "replace", "ONE\ntwo", "1\n2")},
			want:  map[string]string{"f.txt": "1\n2\nthree\n"}},
		{name: "add creates file and folders", edits: []map[string]any{edit("new/deep/n.txt", "add", "", "hello"), edit("new/deep/n.txt", "replace", "hello", "bye")},
			want: map[string]string{"new/deep/n.txt": "bye\n"}, wantMsg: "created"},
		{name: "add to file without final newline", files: map[string]string{"f.txt": "x"},
			edits: []map[string]any{edit("f.txt", "add", "", "y\n")}, want: map[string]string{"f.txt": "x\ny\n"}},
		{name: "whitespace-tolerant like edit_file", files: map[string]string{"f.py": "def f():\n    return 1\n"},
			edits: []map[string]any{edit("f.py", "replace", "return 1", "return 2")}, want: map[string]string{"f.py": "def f():\n    return 2\n"}},
		{name: "crlf kept", files: map[string]string{"w.txt": "a\r\nb\r\n"},
			edits: []map[string]any{edit("w.txt", "replace", "a\nb", "A\nB"), edit("w.txt", "add", "", "c")}, want: map[string]string{"w.txt": "A\r\nB\r\nc\r\n"}},
		{name: "second edit missing names it and changes nothing", files: map[string]string{"a.txt": "alpha\n", "b.txt": "func main() {\n\tfmt.Println(\"hello world\")\n}\n"},
			edits:   []map[string]any{edit("a.txt", "replace", "alpha", "ALPHA"), edit("b.txt", "replace", `fmt.Println("hello wrld")`, "x")},
			wantErr: "edits[1] (replace b.txt): old_text was not found in b.txt. The closest lines (2-2"},
		{name: "later edit sees earlier ones", files: map[string]string{"f.txt": "one\n"},
			edits:   []map[string]any{edit("f.txt", "replace", "one", "two"), edit("f.txt", "replace", "one", "three")},
			wantErr: "edits[1] (replace f.txt): old_text was not found"},
		{name: "ambiguous", files: map[string]string{"f.txt": "x\ny\nx\n"}, edits: []map[string]any{edit("f.txt", "replace", "x", "z")},
			wantErr: "occurs 2 times in f.txt (at lines 1, 3)"},
		{name: "replace in missing file", edits: []map[string]any{edit("nope.txt", "replace", "a", "b")}, wantErr: `nope.txt does not exist; use action "add"`},
		{name: "replace without old_text", files: map[string]string{"f.txt": "a\n"}, edits: []map[string]any{edit("f.txt", "replace", "", "b")}, wantErr: "old_text is required"},
		{name: "missing new_text", files: map[string]string{"f.txt": "a\n"}, edits: []map[string]any{{"path": "f.txt", "action": "add"}}, wantErr: "new_text is required"},
		{name: "binary refused", files: map[string]string{"bin": "a\x00b"}, edits: []map[string]any{edit("bin", "add", "", "x")}, wantErr: "binary file"},
		{name: "folder refused", files: map[string]string{"d/f.txt": "a\n"}, edits: []map[string]any{edit("d", "add", "", "x")}, wantErr: "is a folder"},
		{name: "outside refused", files: map[string]string{"f.txt": "a\n"},
			edits: []map[string]any{edit("f.txt", "add", "", "b"), edit("../outside/secret.txt", "add", "", "pwned")}, wantErr: "outside the workspace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := setup(t, Options{RestrictToWorkspace: true})
			for name, content := range tt.files {
				write(t, filepath.Join(e.ws, name), content)
			}
			before := snapshot(t, filepath.Dir(e.ws))
			res, err := e.call(t, "apply_patch", patchArgs(tt.edits...))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				if diff := cmp.Diff(before, snapshot(t, filepath.Dir(e.ws))); diff != "" {
					t.Errorf("a refused patch changed files (-before +after):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(res.Content, tt.wantMsg) {
				t.Errorf("result = %q, want it to contain %q", res.Content, tt.wantMsg)
			}
			for name, want := range tt.want {
				if got := e.read(t, name); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
		})
	}
}

func TestApplyPatchDryRun(t *testing.T) {
	e := setup(t, Options{RestrictToWorkspace: true})
	write(t, filepath.Join(e.ws, "f.txt"), "a\n")
	before := snapshot(t, e.ws)
	args := patchArgs(edit("f.txt", "replace", "a", "b"), edit("g/new.txt", "add", "", "n"))
	args["dry_run"] = true
	res, err := e.call(t, "apply_patch", args)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Dry run: all 2 edits apply", "- f.txt: replaced at line 1 (-1 +1 lines)", "- g/new.txt: created (+1 lines)"} {
		if !strings.Contains(res.Content, want) {
			t.Errorf("result = %q, want it to contain %q", res.Content, want)
		}
	}
	if diff := cmp.Diff(before, snapshot(t, e.ws)); diff != "" {
		t.Errorf("dry run changed files (-before +after):\n%s", diff)
	}
}

func TestApplyPatchTooManyEdits(t *testing.T) {
	e := setup(t, Options{RestrictToWorkspace: true})
	edits := make([]map[string]any, maxPatchEdits+1)
	for i := range edits {
		edits[i] = edit("f.txt", "add", "", "x")
	}
	if _, err := e.call(t, "apply_patch", patchArgs(edits...)); err == nil {
		t.Fatalf("%d edits accepted, want at most %d", len(edits), maxPatchEdits)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "f.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("f.txt stat = %v, want it never created", err)
	}
}

// A write that fails partway (the third file of four here) rolls back the
// two written before it: changed files get their old bytes and mode back,
// created files and the folders made for them disappear.
func TestApplyPatchRollsBackAFailedWrite(t *testing.T) {
	for _, failAt := range []int{1, 2, 3} {
		t.Run("fail at write "+itoa(failAt), func(t *testing.T) {
			base, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(base, "a.txt"), "alpha\n")
			if err := os.Chmod(filepath.Join(base, "a.txt"), 0o600); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(base, "c.txt"), "gamma\n")
			tool, err := NewApplyPatch(Options{Workspace: base, RestrictToWorkspace: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			writes := 0
			real := tool.write
			tool.write = func(loc *pathguard.Location, data []byte) (bool, error) {
				writes++
				if writes == failAt {
					return false, errors.New("disk full")
				}
				return real(loc, data)
			}
			before := snapshot(t, base)
			modeBefore := mode(t, filepath.Join(base, "a.txt"))
			_, err = tool.Execute(t.Context(), patchArgs(
				edit("a.txt", "replace", "alpha", "ALPHA"),
				edit("made/deeper/b.txt", "add", "", "beta"),
				edit("c.txt", "add", "", "more"),
				edit("d.txt", "add", "", "delta"),
			))
			if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "nothing changed") {
				t.Fatalf("error = %v, want the failed write and that nothing changed", err)
			}
			if diff := cmp.Diff(before, snapshot(t, base)); diff != "" {
				t.Errorf("files after a failed patch (-before +after):\n%s", diff)
			}
			if got := mode(t, filepath.Join(base, "a.txt")); got != modeBefore {
				t.Errorf("a.txt mode = %v after roll-back, want %v", got, modeBefore)
			}
		})
	}
}

// A real write failure, no test hook: between the check and the write the
// folder a new file goes into is replaced by a file, so creating it fails.
// The file written before it is restored.
func TestApplyPatchRollsBackARealFailure(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(base, "a.txt"), "alpha\n")
	tool, err := NewApplyPatch(Options{Workspace: base, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	real := tool.write
	tool.write = func(loc *pathguard.Location, data []byte) (bool, error) {
		if strings.HasSuffix(loc.Name, "a.txt") && string(data) == "ALPHA\n" {
			// Something else makes "blocked" a file once a.txt is written.
			defer write(t, filepath.Join(base, "blocked"), "not a folder\n")
		}
		return real(loc, data)
	}
	_, err = tool.Execute(t.Context(), patchArgs(edit("a.txt", "replace", "alpha", "ALPHA"), edit("blocked/b.txt", "add", "", "beta")))
	if err == nil || !strings.Contains(err.Error(), "writing blocked/b.txt failed") {
		t.Fatalf("error = %v, want the write of blocked/b.txt to fail", err)
	}
	if got, _ := os.ReadFile(filepath.Join(base, "a.txt")); string(got) != "alpha\n" {
		t.Errorf("a.txt = %q after roll-back, want the original", got)
	}
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}
