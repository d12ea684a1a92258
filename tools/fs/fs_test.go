package fs

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nanobot-go/nanobot/tools"
)

// env is a workspace with a sibling "outside" folder holding a secret, and
// symlinks from the workspace into it.
type env struct {
	ws, outside string
	reg         *tools.Registry
}

func setup(t *testing.T, opts Options) *env {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{e.ws, e.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(e.outside, "secret.txt"), "top secret\n")
	if err := os.Symlink(e.outside, filepath.Join(e.ws, "outlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(e.outside, "secret.txt"), filepath.Join(e.ws, "secretlink")); err != nil {
		t.Fatal(err)
	}
	opts.Workspace = e.ws
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	all, err := All(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.reg = tools.NewRegistry()
	for _, tool := range all {
		if err := e.reg.Register(tool); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (e *env) call(t *testing.T, tool string, args map[string]any) (tools.Result, error) {
	t.Helper()
	return e.reg.Execute(context.Background(), tool, args)
}

func (e *env) read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.ws, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRestrictedPathsRefused(t *testing.T) {
	e := setup(t, Options{RestrictToWorkspace: true})
	paths := []string{
		"../outside/secret.txt",
		"sub/../../outside/secret.txt",
		"outlink/secret.txt",
		"secretlink",
		"outlink/new.txt",
		"outlink/newdir/new.txt",
		"/etc/passwd",
		"/etc/nanobot-test-new-file",
	}
	for _, p := range paths {
		for _, call := range []struct {
			tool string
			args map[string]any
		}{
			{"read_file", map[string]any{"path": p}},
			{"write_file", map[string]any{"path": p, "content": "x"}},
			{"edit_file", map[string]any{"path": p, "old_text": "top", "new_text": "bottom"}},
			{"list_dir", map[string]any{"path": p}},
			{"apply_patch", patchArgs(edit(p, "add", "", "x"))},
			{"grep", map[string]any{"pattern": "top", "path": p}},
			{"find_files", map[string]any{"path": p}},
		} {
			t.Run(call.tool+" "+p, func(t *testing.T) {
				res, err := e.call(t, call.tool, call.args)
				if err == nil || !strings.Contains(err.Error(), "outside the workspace") {
					t.Fatalf("got %q, %v; want an outside-the-workspace refusal", res.Content, err)
				}
				if strings.Contains(err.Error(), "top secret") {
					t.Error("secret leaked in the error")
				}
			})
		}
	}
	if got, _ := os.ReadFile(filepath.Join(e.outside, "secret.txt")); string(got) != "top secret\n" {
		t.Errorf("outside file changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(e.outside, "new.txt")); err == nil {
		t.Error("a file was created outside the workspace")
	}
}

func TestUnrestrictedAndAllowedDirs(t *testing.T) {
	e := setup(t, Options{})
	res, err := e.call(t, "read_file", map[string]any{"path": "outlink/secret.txt"})
	if err != nil || !strings.Contains(res.Content, "top secret") {
		t.Errorf("unrestricted read through symlink: %q, %v", res.Content, err)
	}
	// AllowedDirs opens exactly the named folder.
	base, _ := filepath.EvalSymlinks(t.TempDir())
	media := filepath.Join(base, "media")
	write(t, filepath.Join(media, "photo.txt"), "caption\n")
	e3 := setup(t, Options{RestrictToWorkspace: true, AllowedDirs: []string{media}})
	res, err = e3.call(t, "read_file", map[string]any{"path": filepath.Join(media, "photo.txt")})
	if err != nil || !strings.Contains(res.Content, "caption") {
		t.Errorf("allowed dir read: %q, %v", res.Content, err)
	}
	if _, err := e3.call(t, "read_file", map[string]any{"path": "secretlink"}); err == nil {
		t.Error("allowed dir must not open other folders")
	}
}

func numbered(from, to int) string {
	var sb strings.Builder
	for i := from; i <= to; i++ {
		sb.WriteString("line " + itoa(i) + "\n")
	}
	return sb.String()
}

func itoa(i int) string { return fmt.Sprintf("%02d", i) }

func TestReadFilePaging(t *testing.T) {
	e := setup(t, Options{})
	write(t, filepath.Join(e.ws, "notes.txt"), numbered(1, 25))
	tests := []struct {
		name       string
		args       map[string]any
		wantHeader string
		wantFirst  string
		wantLast   string
	}{
		{"whole file", map[string]any{"path": "notes.txt"}, "File notes.txt (25 lines):", "     1| line 01", "    25| line 25"},
		{"first page", map[string]any{"path": "notes.txt", "limit": 10}, "File notes.txt (25 lines), lines 1-10. Next page: read_file with offset=11.", "     1| line 01", "    10| line 10"},
		{"middle page", map[string]any{"path": "notes.txt", "offset": "11", "limit": "10"}, "File notes.txt (25 lines), lines 11-20. Next page: read_file with offset=21.", "    11| line 11", "    20| line 20"},
		{"last page", map[string]any{"path": "notes.txt", "offset": 21, "limit": 10}, "File notes.txt (25 lines), lines 21-25 (end of file):", "    21| line 21", "    25| line 25"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := e.call(t, "read_file", tt.args)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(res.Content, "\n")
			if lines[0] != tt.wantHeader || lines[1] != tt.wantFirst || lines[len(lines)-1] != tt.wantLast {
				t.Errorf("got:\n%s", res.Content)
			}
		})
	}
	if _, err := e.call(t, "read_file", map[string]any{"path": "notes.txt", "offset": 30}); err == nil || !strings.Contains(err.Error(), "past the end") {
		t.Errorf("offset past end: %v", err)
	}
}

func TestReadFileCharCap(t *testing.T) {
	e := setup(t, Options{MaxReadChars: 100})
	write(t, filepath.Join(e.ws, "big.txt"), numbered(1, 50))
	res, err := e.call(t, "read_file", map[string]any{"path": "big.txt"})
	if err != nil {
		t.Fatal(err)
	}
	header, body, _ := strings.Cut(res.Content, "\n")
	if !strings.Contains(header, "stopped at the 100-character limit") || !strings.Contains(header, "offset=") {
		t.Errorf("header = %q", header)
	}
	if n := len([]rune(body)); n > 100 {
		t.Errorf("body has %d characters, want <= 100", n)
	}
	write(t, filepath.Join(e.ws, "long.txt"), strings.Repeat("x", 1000)+"\nsecond\n")
	res, err = e.call(t, "read_file", map[string]any{"path": "long.txt"})
	if err != nil || !strings.Contains(res.Content, "[line cut:") || len(res.Content) > 400 {
		t.Errorf("long line: %q, %v", res.Content, err)
	}
}

func TestReadFileKinds(t *testing.T) {
	e := setup(t, Options{})
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{255, 0, 0, 255})
	var pngBuf, jpgBuf, gifBuf bytes.Buffer
	if err := png.Encode(&pngBuf, img); err != nil {
		t.Fatal(err)
	}
	if err := jpeg.Encode(&jpgBuf, img, nil); err != nil {
		t.Fatal(err)
	}
	if err := gif.Encode(&gifBuf, img, nil); err != nil {
		t.Fatal(err)
	}
	webp := append([]byte("RIFF\x1a\x00\x00\x00WEBPVP8 "), make([]byte, 16)...)
	files := map[string][]byte{
		"pic.dat":   pngBuf.Bytes(), // sniffed, not judged by extension
		"photo.jpg": jpgBuf.Bytes(),
		"anim.gif":  gifBuf.Bytes(),
		"img.webp":  webp,
	}
	wantMIME := map[string]string{"pic.dat": "image/png", "photo.jpg": "image/jpeg", "anim.gif": "image/gif", "img.webp": "image/webp"}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(e.ws, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			res, err := e.call(t, "read_file", map[string]any{"path": name})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Images) != 1 || res.Images[0].MIMEType != wantMIME[name] || !bytes.Equal(res.Images[0].Data, data) {
				t.Fatalf("images = %+v, want one %s", res.Images, wantMIME[name])
			}
			if !strings.Contains(res.Content, wantMIME[name]) {
				t.Errorf("content = %q", res.Content)
			}
		})
	}
	write(t, filepath.Join(e.ws, "prog.bin"), "\x7fELF\x02\x01\x01\x00\x00\x00binary")
	if _, err := e.call(t, "read_file", map[string]any{"path": "prog.bin"}); err == nil || !strings.Contains(err.Error(), "binary file") {
		t.Errorf("binary: %v", err)
	}
	write(t, filepath.Join(e.ws, "doc.pdf"), "%PDF-1.7\n1 0 obj\n")
	if _, err := e.call(t, "read_file", map[string]any{"path": "doc.pdf"}); err == nil || !strings.Contains(err.Error(), "application/pdf") {
		t.Errorf("pdf: %v", err)
	}
	write(t, filepath.Join(e.ws, "latin1.txt"), "caf\xe9\n")
	if res, err := e.call(t, "read_file", map[string]any{"path": "latin1.txt"}); err != nil || !strings.Contains(res.Content, "caf\uFFFD") {
		t.Errorf("latin-1 text: %q, %v", res.Content, err)
	}
	write(t, filepath.Join(e.ws, "empty.txt"), "")
	if res, err := e.call(t, "read_file", map[string]any{"path": "empty.txt"}); err != nil || res.Content != "File empty.txt is empty." {
		t.Errorf("empty: %q, %v", res.Content, err)
	}
	if _, err := e.call(t, "read_file", map[string]any{"path": "."}); err == nil || !strings.Contains(err.Error(), "list_dir") {
		t.Errorf("folder: %v", err)
	}
	if _, err := e.call(t, "read_file", map[string]any{"path": "nope.txt"}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing: %v", err)
	}
}

func TestWriteFile(t *testing.T) {
	e := setup(t, Options{RestrictToWorkspace: true})
	res, err := e.call(t, "write_file", map[string]any{"path": "a/b/c.txt", "content": "hello"})
	if err != nil || res.Content != "Created a/b/c.txt (5 bytes)." {
		t.Fatalf("write: %q, %v", res.Content, err)
	}
	if got := e.read(t, "a/b/c.txt"); got != "hello" {
		t.Errorf("content = %q", got)
	}
	if err := os.Chmod(filepath.Join(e.ws, "a/b/c.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err = e.call(t, "write_file", map[string]any{"path": "a/b/c.txt", "content": "héllo"})
	if err != nil || res.Content != "Overwrote a/b/c.txt (6 bytes)." {
		t.Fatalf("overwrite: %q, %v", res.Content, err)
	}
	if fi, _ := os.Stat(filepath.Join(e.ws, "a/b/c.txt")); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600 kept", fi.Mode().Perm())
	}
	if _, err := e.call(t, "write_file", map[string]any{"path": "a", "content": "x"}); err == nil {
		t.Error("writing over a folder: want error")
	}
}

func TestEditFile(t *testing.T) {
	const pyFile = "def f():\n    if x:\n        return 1\n    return 2\n"
	tests := []struct {
		name    string
		content string
		args    map[string]any
		want    string // file after the edit
		wantMsg string // part of the result
		wantErr string // part of the error
	}{
		{name: "exact", content: "alpha\nbeta\ngamma\n", args: map[string]any{"old_text": "beta", "new_text": "BETA"},
			want: "alpha\nBETA\ngamma\n", wantMsg: "replaced 1 occurrence at line 2."},
		{name: "multiple without replace_all", content: "x = 1\ny = 2\nx = 1\nz\nx = 1\n", args: map[string]any{"old_text": "x = 1", "new_text": "x = 3"},
			wantErr: "occurs 3 times in f.txt (at lines 1, 3, 5)"},
		{name: "replace_all", content: "x = 1\ny = 2\nx = 1\n", args: map[string]any{"old_text": "x = 1", "new_text": "x = 3", "replace_all": "true"},
			want: "x = 3\ny = 2\nx = 3\n", wantMsg: "replaced 2 occurrences at line 1, 3."},
		{name: "trailing whitespace tolerated", content: "a  \nb\t\nc\n", args: map[string]any{"old_text": "a\nb", "new_text": "A\nB"},
			want: "A\nB\nc\n", wantMsg: "ignoring whitespace and indentation"},
		{name: "indentation re-based", content: pyFile, args: map[string]any{"old_text": "if x:\n    return 1", "new_text": "if x:\n    return 10\nreturn 0"},
			want: "def f():\n    if x:\n        return 10\n    return 0\n    return 2\n", wantMsg: "ignoring whitespace and indentation"},
		{name: "tabs versus spaces", content: "func f() {\n\tif ok {\n\t\tgo()\n\t}\n}\n", args: map[string]any{"old_text": "    if ok {\n        go()\n    }", "new_text": "    if ok {\n        run()\n    }"},
			want: "func f() {\n\tif ok {\n\t\trun()\n\t}\n}\n", wantMsg: "ignoring whitespace"},
		{name: "fragment with different spacing", content: "call(a,  b,\n     c)\n", args: map[string]any{"old_text": "call(a, b, c)", "new_text": "call(a, c)"},
			want: "call(a, c)\n", wantMsg: "ignoring whitespace differences"},
		{name: "fuzzy multiple is an error", content: "  x\ny\n\tx\n", args: map[string]any{"old_text": "x ", "new_text": "z"},
			wantErr: "at lines 1, 3"},
		{name: "line-number prefixes stripped", content: "one\ntwo\nthree\n", args: map[string]any{"old_text": "     2| two\n     3| three", "new_text": "2\n3"},
			want: "one\n2\n3\n"},
		{name: "delete lines fuzzily", content: "keep\n  drop me  \nkeep too\n", args: map[string]any{"old_text": "drop me", "new_text": ""},
			want: "keep\n    \nkeep too\n"},
		{name: "delete whole lines fuzzily", content: "keep\n  drop   me\n  and me\nkeep too\n", args: map[string]any{"old_text": "drop me\nand me\n", "new_text": ""},
			want: "keep\nkeep too\n", wantMsg: "ignoring whitespace and indentation"},
		{name: "crlf kept", content: "a\r\nb\r\nc\r\n", args: map[string]any{"old_text": "a\nb", "new_text": "A\nB"},
			want: "A\r\nB\r\nc\r\n"},
		{name: "not found shows closest", content: "func main() {\n\tfmt.Println(\"hello world\")\n}\n", args: map[string]any{"old_text": "fmt.Println(\"hello wrld\")", "new_text": "x"},
			wantErr: "closest lines (2-2"},
		{name: "not found, nothing similar", content: "aaaa\n", args: map[string]any{"old_text": "zzzz qqqq", "new_text": "x"},
			wantErr: "no similar lines"},
		{name: "identical texts", content: "a\n", args: map[string]any{"old_text": "a", "new_text": "a"}, wantErr: "identical"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := setup(t, Options{RestrictToWorkspace: true})
			write(t, filepath.Join(e.ws, "f.txt"), tt.content)
			args := map[string]any{"path": "f.txt"}
			for k, v := range tt.args {
				args[k] = v
			}
			res, err := e.call(t, "edit_file", args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				if got := e.read(t, "f.txt"); got != tt.content {
					t.Errorf("file changed on error: %q", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(res.Content, tt.wantMsg) {
				t.Errorf("result = %q, want it to contain %q", res.Content, tt.wantMsg)
			}
			if diff := cmp.Diff(tt.want, e.read(t, "f.txt")); diff != "" {
				t.Errorf("file (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListDir(t *testing.T) {
	e := setup(t, Options{RestrictToWorkspace: true})
	write(t, filepath.Join(e.ws, "src", "main.go"), "package main\n")
	write(t, filepath.Join(e.ws, "src", "util", "u.go"), "package util\n")
	write(t, filepath.Join(e.ws, "README.md"), strings.Repeat("x", 2048))
	write(t, filepath.Join(e.ws, "node_modules", "dep", "index.js"), "")
	write(t, filepath.Join(e.ws, ".git", "HEAD"), "ref")
	write(t, filepath.Join(e.ws, "src", "__pycache__", "x.pyc"), "")

	res, err := e.call(t, "list_dir", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	want := "Folder . (4 entries):\nREADME.md  2.0 KB\noutlink -> " + e.outside + "\nsecretlink -> " + filepath.Join(e.outside, "secret.txt") + "\nsrc/\n"
	if !strings.HasPrefix(res.Content+"\n", want) || !strings.HasSuffix(res.Content, "(skipped: .git, node_modules)") {
		t.Errorf("flat listing:\n%s", res.Content)
	}
	res, err = e.call(t, "list_dir", map[string]any{"path": "src", "recursive": true})
	if err != nil {
		t.Fatal(err)
	}
	wantRec := "Folder src (3 entries):\nmain.go  13 B\nutil/\nutil/u.go  13 B\n(skipped: __pycache__)"
	if res.Content != wantRec {
		t.Errorf("recursive listing:\n%s\nwant:\n%s", res.Content, wantRec)
	}
	for i := range 30 {
		write(t, filepath.Join(e.ws, "many", "f"+itoa(i)), "")
	}
	res, err = e.call(t, "list_dir", map[string]any{"path": "many", "max_entries": 10})
	if err != nil || !strings.HasPrefix(res.Content, "Folder many: showing 10 of 30 entries") || strings.Count(res.Content, "\n") != 10 {
		t.Errorf("capped listing:\n%s (%v)", res.Content, err)
	}
	if res, err := e.call(t, "list_dir", map[string]any{"path": "node_modules"}); err != nil || !strings.Contains(res.Content, "dep/") {
		t.Errorf("listing an ignored folder by name: %q, %v", res.Content, err)
	}
	if _, err := e.call(t, "list_dir", map[string]any{"path": "README.md"}); err == nil || !strings.Contains(err.Error(), "read_file") {
		t.Errorf("file: %v", err)
	}
}

// Writes replace the file by renaming a temporary file over it: nothing is
// left beside it, and a symlink inside the workspace still points at the
// file it named, which holds the new content.
func TestWriteReplacesAtomically(t *testing.T) {
	e := setup(t, Options{RestrictToWorkspace: true})
	write(t, filepath.Join(e.ws, "docs", "a.txt"), "old\n")
	if err := os.Symlink("docs/a.txt", filepath.Join(e.ws, "alias")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.call(t, "write_file", map[string]any{"path": "alias", "content": "new\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.call(t, "edit_file", map[string]any{"path": "docs/a.txt", "old_text": "new", "new_text": "newer"}); err != nil {
		t.Fatal(err)
	}
	if got := e.read(t, "docs/a.txt"); got != "newer\n" {
		t.Errorf("got %q, want %q", got, "newer\n")
	}
	if fi, err := os.Lstat(filepath.Join(e.ws, "alias")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("alias is no longer a symlink: %v, %v", fi, err)
	}
	entries, err := os.ReadDir(filepath.Join(e.ws, "docs"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var names []string
		for _, d := range entries {
			names = append(names, d.Name())
		}
		t.Errorf("docs holds %v, want only a.txt", names)
	}
}
