package fs

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/tools/internal/pathguard/pathguardtest"
)

// raceIterations is how often each tool runs against the swapping folder.
const raceIterations = 2000

// TestSymlinkSwapRace reproduces issue 19: while a goroutine keeps
// exchanging the workspace folder "box" with a symlink to a secret folder
// outside the workspace, every file tool is called on a path under "box".
// A tool that checks the path and then opens it again by name ends up in
// the secret folder now and then; tools that open through the workspace
// root never do.
func TestSymlinkSwapRace(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, secret := filepath.Join(base, "ws"), filepath.Join(base, "secret")
	box := filepath.Join(ws, "box")
	write(t, filepath.Join(box, "note.txt"), "public note\n")
	write(t, filepath.Join(box, "edit.txt"), "ping\n")
	write(t, filepath.Join(secret, "note.txt"), "SECRET api key\n")
	write(t, filepath.Join(secret, "edit.txt"), "ping SECRET\n")
	write(t, filepath.Join(secret, "config.json"), "{\"apiKey\": \"SECRET\"}\n")

	opts := Options{Workspace: ws, RestrictToWorkspace: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	read, err := NewReadFile(opts)
	if err != nil {
		t.Fatal(err)
	}
	wr, err := NewWriteFile(opts)
	if err != nil {
		t.Fatal(err)
	}
	ed, err := NewEditFile(opts)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := NewListDir(opts)
	if err != nil {
		t.Fatal(err)
	}
	gr, err := NewGrep(opts)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := NewFindFiles(opts)
	if err != nil {
		t.Fatal(err)
	}
	ap, err := NewApplyPatch(opts)
	if err != nil {
		t.Fatal(err)
	}
	// The real box folder, whatever its name is at the moment.
	realBox, err := os.OpenRoot(box)
	if err != nil {
		t.Fatal(err)
	}
	defer realBox.Close()
	secretUnchanged := func(name, want string) bool {
		got, err := os.ReadFile(filepath.Join(secret, name))
		return err == nil && string(got) == want
	}

	sw := pathguardtest.Swap(t, box, filepath.Join(ws, "swap"), secret)
	ctx := context.Background()
	escapes := map[string]int{}
	errs := map[string]int{}
	for range raceIterations {
		res, err := read.Execute(ctx, map[string]any{"path": "box/note.txt"})
		if err != nil {
			errs["read_file"]++
		} else if strings.Contains(res.Content, "SECRET") {
			escapes["read_file"]++
		}
	}
	for range raceIterations {
		if _, err := wr.Execute(ctx, map[string]any{"path": "box/new.txt", "content": "written\n"}); err != nil {
			errs["write_file"]++
		}
		if _, err := os.Lstat(filepath.Join(secret, "new.txt")); err == nil {
			escapes["write_file"]++
			os.Remove(filepath.Join(secret, "new.txt"))
		}
	}
	for range raceIterations {
		// Toggle between ping and pong so every call has something to do.
		cur, err := realBox.ReadFile("edit.txt")
		if err != nil {
			t.Fatal(err)
		}
		oldText, newText := "ping", "pong"
		if strings.HasPrefix(string(cur), "pong") {
			oldText, newText = newText, oldText
		}
		if _, err := ed.Execute(ctx, map[string]any{"path": "box/edit.txt", "old_text": oldText, "new_text": newText}); err != nil {
			errs["edit_file"]++
		}
		after, err := realBox.ReadFile("edit.txt")
		if err != nil {
			t.Fatal(err)
		}
		if !secretUnchanged("edit.txt", "ping SECRET\n") || strings.Contains(string(after), "SECRET") {
			escapes["edit_file"]++
			if err := os.WriteFile(filepath.Join(secret, "edit.txt"), []byte("ping SECRET\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := realBox.WriteFile("edit.txt", []byte("ping\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range raceIterations {
		res, err := ls.Execute(ctx, map[string]any{"path": "box"})
		if err != nil {
			errs["list_dir"]++
		} else if strings.Contains(res.Content, "config.json") {
			escapes["list_dir"]++
		}
	}
	for range raceIterations {
		res, err := gr.Execute(ctx, map[string]any{"pattern": "SECRET|apiKey", "path": "box", "output_mode": "content"})
		if err != nil {
			errs["grep"]++
		} else if !strings.HasPrefix(res.Content, "No matches") {
			escapes["grep"]++
		}
		res, err = fd.Execute(ctx, map[string]any{"path": "box"})
		if err != nil {
			errs["find_files"]++
		} else if strings.Contains(res.Content, "config.json") {
			escapes["find_files"]++
		}
	}
	for range raceIterations {
		if _, err := ap.Execute(ctx, map[string]any{"edits": []any{
			map[string]any{"path": "box/patched.txt", "action": "add", "new_text": "x"},
			map[string]any{"path": "box/new.txt", "action": "add", "new_text": "y"},
		}}); err != nil {
			errs["apply_patch"]++
		}
		for _, name := range []string{"patched.txt", "new.txt"} {
			if _, err := os.Lstat(filepath.Join(secret, name)); err == nil {
				escapes["apply_patch"]++
				os.Remove(filepath.Join(secret, name))
			}
		}
	}
	swaps := sw.Stop(t)

	total := 0
	for _, tool := range []string{"read_file", "write_file", "edit_file", "list_dir", "grep", "find_files", "apply_patch"} {
		t.Logf("%s: %d escapes, %d refusals in %d calls", tool, escapes[tool], errs[tool], raceIterations)
		total += escapes[tool]
	}
	t.Logf("%d folder swaps", swaps)
	if total != 0 {
		t.Errorf("got %d escapes out of the workspace, want 0", total)
	}
	if !secretUnchanged("config.json", "{\"apiKey\": \"SECRET\"}\n") {
		t.Error("secret config changed")
	}
}
