package fs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFindFiles(t *testing.T) {
	e := setup(t, Options{RestrictToWorkspace: true})
	ages := map[string]int{ // seconds after a fixed time: larger is newer
		"src/settings_view.tsx": 50,
		"src/settings_api.py":   40,
		"src/deep/a_test.go":    30,
		"README.md":             20,
		"notes/settings.md":     10,
		"out.log":               60, // ignored
		"node_modules/x/y.js":   70, // skipped folder
		"src/gen/z.go":          80, // ignored by the nested .gitignore
	}
	for name, age := range ages {
		write(t, filepath.Join(e.ws, name), "x\n")
		touch(t, filepath.Join(e.ws, name), age)
	}
	write(t, filepath.Join(e.ws, ".gitignore"), "*.log\n")
	write(t, filepath.Join(e.ws, "src/.gitignore"), "gen/\n")
	touch(t, filepath.Join(e.ws, ".gitignore"), 0)
	touch(t, filepath.Join(e.ws, "src/.gitignore"), 0)
	if err := os.Symlink(filepath.Join(e.ws, "README.md"), filepath.Join(e.ws, "link.md")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{name: "unknown type finds nothing", args: map[string]any{"type": "py,md"}, want: "No files found in ."},
		{name: "glob names, newest first", args: map[string]any{"glob": "*.{md,tsx}"}, want: "src/settings_view.tsx\nREADME.md\nnotes/settings.md"},
		{name: "sort path", args: map[string]any{"glob": "*.{md,tsx}", "sort": "path"}, want: "README.md\nnotes/settings.md\nsrc/settings_view.tsx"},
		{name: "glob paths below path", args: map[string]any{"path": "src", "glob": "**/*_test.go"}, want: "src/deep/a_test.go"},
		{name: "query words and type", args: map[string]any{"query": "SETTINGS src", "type": "ts"}, want: "src/settings_view.tsx"},
		{name: "include_dirs", args: map[string]any{"query": "deep", "include_dirs": true, "sort": "path"}, want: "src/deep/\nsrc/deep/a_test.go"},
		{name: "everything not ignored", args: map[string]any{"sort": "path"},
			want: ".gitignore\nREADME.md\nnotes/settings.md\nsrc/.gitignore\nsrc/deep/a_test.go\nsrc/settings_api.py\nsrc/settings_view.tsx"},
		{name: "page", args: map[string]any{"head_limit": 2, "offset": 1},
			want: "src/settings_api.py\nsrc/deep/a_test.go\n\n(7 paths match; showing 2 from offset 1; pass offset=3 for the next page)"},
		{name: "offset past the end", args: map[string]any{"offset": 9}, want: "Nothing from offset 9: 7 paths match."},
		{name: "a file", args: map[string]any{"path": "README.md"}, want: "README.md"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := e.call(t, "find_files", tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, res.Content); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := e.call(t, "find_files", map[string]any{"sort": "size"}); err == nil || !strings.Contains(err.Error(), "sort") {
		t.Errorf("sort=size: %v, want a schema error", err)
	}
}

// Unrestricted, a walk still does not follow a symlink out of the folder
// searched.
func TestFindFilesDoesNotFollowSymlinks(t *testing.T) {
	e := setup(t, Options{})
	write(t, filepath.Join(e.ws, "a.txt"), "x\n")
	res, err := e.call(t, "find_files", map[string]any{"include_dirs": true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != "a.txt" {
		t.Errorf("find_files = %q, want only a.txt (outlink and secretlink are symlinks)", res.Content)
	}
	res, err = e.call(t, "grep", map[string]any{"pattern": "secret"})
	if err != nil || !strings.HasPrefix(res.Content, "No matches") {
		t.Errorf("grep through symlinks: %q, %v", res.Content, err)
	}
}
