package fs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// touch sets a file's modification time to base plus age seconds.
func touch(t *testing.T, p string, age int) {
	t.Helper()
	when := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(age) * time.Second)
	if err := os.Chtimes(p, when, when); err != nil {
		t.Fatal(err)
	}
}

func TestGrep(t *testing.T) {
	e := setup(t, Options{RestrictToWorkspace: true})
	write(t, filepath.Join(e.ws, "src/main.go"), "package main\n\nfunc main() {\n\tHello()\n}\n\nfunc Hello() {}\n")
	write(t, filepath.Join(e.ws, "src/util.py"), "def hello():\n    return 'Hello'\n")
	write(t, filepath.Join(e.ws, "README.md"), "# Hello world\nsee a.b*c\n")
	touch(t, filepath.Join(e.ws, "src/main.go"), 30)
	touch(t, filepath.Join(e.ws, "src/util.py"), 10)
	touch(t, filepath.Join(e.ws, "README.md"), 20)
	tests := []struct {
		name    string
		args    map[string]any
		want    string // the whole result, or with wantErr a part of the error
		wantErr bool
	}{
		{name: "files newest first by default", args: map[string]any{"pattern": "Hello"},
			want: "src/main.go\nREADME.md\nsrc/util.py"},
		{name: "content", args: map[string]any{"pattern": `func \w+\(`, "output_mode": "content"},
			want: "src/main.go:3: func main() {\nsrc/main.go:7: func Hello() {}"},
		{name: "context separates groups", args: map[string]any{"pattern": "Hello", "path": "src/main.go", "output_mode": "content", "context_before": 1}},
		{name: "count", args: map[string]any{"pattern": "(?i)hello", "output_mode": "count"},
			want: "src/main.go: 2\nREADME.md: 1\nsrc/util.py: 2\n\n(5 matching lines in 3 files)"},
		{name: "case_insensitive", args: map[string]any{"pattern": "HELLO\\(\\)", "case_insensitive": true, "output_mode": "content"},
			want: "src/main.go:4: \tHello()\nsrc/main.go:7: func Hello() {}\nsrc/util.py:1: def hello():"},
		{name: "fixed_strings", args: map[string]any{"pattern": "a.b*c", "fixed_strings": true, "output_mode": "content"},
			want: "README.md:2: see a.b*c"},
		{name: "anchors are per line", args: map[string]any{"pattern": "^func", "output_mode": "count"},
			want: "src/main.go: 2\n\n(2 matching lines in 1 files)"},
		{name: "glob on names", args: map[string]any{"pattern": "Hello", "glob": "*.py"}, want: "src/util.py"},
		{name: "glob on paths", args: map[string]any{"pattern": "Hello", "glob": "src/**"}, want: "src/main.go\nsrc/util.py"},
		{name: "type", args: map[string]any{"pattern": "Hello", "type": "md"}, want: "README.md"},
		{name: "path", args: map[string]any{"pattern": "Hello", "path": "src", "type": "py"}, want: "src/util.py"},
		{name: "head_limit and offset", args: map[string]any{"pattern": "Hello", "head_limit": 1, "offset": 1},
			want: "README.md\n\n(more results: showing 1 from offset 1; pass offset=2 for the next page or narrow the search)"},
		{name: "max_results alias", args: map[string]any{"pattern": "Hello", "max_results": 1},
			want: "src/main.go\n\n(more results: showing 1 from offset 0; pass offset=1 for the next page or narrow the search)"},
		{name: "offset past the end", args: map[string]any{"pattern": "Hello", "offset": 5}, want: "Nothing from offset 5: there are 3 results in all."},
		{name: "no match", args: map[string]any{"pattern": "zebra"}, want: `No matches for "zebra" in .`},
		{name: "bad regex", args: map[string]any{"pattern": "(?<=x)y"}, want: "invalid regular expression", wantErr: true},
		{name: "missing path", args: map[string]any{"pattern": "x", "path": "nope"}, want: "nope does not exist", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := e.call(t, "grep", tt.args)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if tt.name == "context separates groups" {
				want = "src/main.go-3- func main() {\nsrc/main.go:4: \tHello()\n--\nsrc/main.go-6- \nsrc/main.go:7: func Hello() {}"
			}
			if diff := cmp.Diff(want, res.Content); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

// What grep leaves out: ignored files (root, nested and above the folder
// searched), .git and dependency folders, binary files, symlinks (one leads
// out of the workspace), files too large for a folder search; long lines
// are cut.
func TestGrepSkips(t *testing.T) {
	e := setup(t, Options{RestrictToWorkspace: true})
	files := map[string]string{
		".gitignore":                  "*.log\n/dist-local/\n",
		"app/.gitignore":              "generated/\n!important.log\n",
		"app/main.go":                 "needle\n",
		"app/debug.log":               "needle\n",
		"app/important.log":           "needle\n",
		"app/generated/x.go":          "needle\n",
		"dist-local/bundle.js":        "needle\n",
		".git/config":                 "needle\n",
		"node_modules/pkg/index.js":   "needle\n",
		"docs/build":                  "needle (a file named build is not a build folder)\n",
		"bin/tool":                    "needle\x00binary",
		"long.txt":                    strings.Repeat("x", 1000) + "needle" + strings.Repeat("y", 1000) + "\n",
		"big/huge.txt":                strings.Repeat("filler line\n", (grepMaxFileBytes/12)+10) + "needle\n",
		"other/.gitignore-not-a-file": "needle\n",
	}
	for name, content := range files {
		write(t, filepath.Join(e.ws, name), content)
	}
	if err := os.Symlink(filepath.Join(e.ws, "app/main.go"), filepath.Join(e.ws, "link.go")); err != nil {
		t.Fatal(err)
	}
	res, err := e.call(t, "grep", map[string]any{"pattern": "needle"})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Content
	for _, want := range []string{"app/main.go", "app/important.log", "docs/build", "long.txt", "other/.gitignore-not-a-file",
		"(skipped 1 binary files)", "(skipped 1 files larger than 2 MB"} {
		if !strings.Contains(got, want) {
			t.Errorf("result lacks %q:\n%s", want, got)
		}
	}
	for _, bad := range []string{"debug.log", "generated", "dist-local", ".git/", "node_modules", "bin/tool", "link.go", "secret", "huge.txt\n"} {
		if strings.Contains(got, bad) {
			t.Errorf("result has %q:\n%s", bad, got)
		}
	}

	// The rules above a sub-folder still apply when it is searched.
	res, err = e.call(t, "grep", map[string]any{"pattern": "needle", "path": "app"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Content, "debug.log") || !strings.Contains(res.Content, "app/main.go") {
		t.Errorf("grep in app = %q, want main.go without debug.log", res.Content)
	}

	// A long line is cut around its start.
	res, err = e.call(t, "grep", map[string]any{"pattern": "needle", "path": "long.txt", "output_mode": "content"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "long.txt:1: " + strings.Repeat("x", grepMaxLineBytes) + " [… 1706 more bytes]"; res.Content != want {
		t.Errorf("long line = %q, want %q", res.Content, want)
	}

	// Named explicitly, a file over the folder-search limit is searched.
	res, err = e.call(t, "grep", map[string]any{"pattern": "needle", "path": "big/huge.txt"})
	if err != nil || res.Content != "big/huge.txt" {
		t.Errorf("explicit large file: %q, %v", res.Content, err)
	}
}

// A tree larger than grep reads in one call: the search stops at its read
// limit and says so.
func TestGrepStaysUnderItsCaps(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100 MB")
	}
	e := setup(t, Options{RestrictToWorkspace: true})
	const files, size = 100, 1 << 20 // 100 MB in 1 MB files
	filler := []byte(strings.Repeat("lorem ipsum dolor sit amet ", 3) + "\n")
	chunk := make([]byte, 0, size)
	for len(chunk)+len(filler) <= size-len("needle\n") {
		chunk = append(chunk, filler...)
	}
	chunk = append(chunk, "needle\n"...)
	for i := range files {
		dir := filepath.Join(e.ws, "tree", itoa(i%10))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "f"+itoa(i)+".txt"), chunk, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	res, err := e.call(t, "grep", map[string]any{"pattern": "needle", "output_mode": "count", "head_limit": 0})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("grep over the tree took %v", time.Since(start))
	if !strings.Contains(res.Content, "(search stopped early: the 64 MB read limit was reached after reading 64 files, 64.0 MB;") {
		t.Errorf("result does not say the read limit stopped it:\n%s", tail(res.Content))
	}
	if n := strings.Count(res.Content, ".txt: 1\n"); n != 64 {
		t.Errorf("%d files counted, want the 64 that fit in the read limit:\n%s", n, tail(res.Content))
	}
}

// Many matching lines: the output stops at its cap and says so.
func TestGrepOutputCap(t *testing.T) {
	e := setup(t, Options{RestrictToWorkspace: true})
	for i := range 4 {
		write(t, filepath.Join(e.ws, "f"+itoa(i)+".txt"), strings.Repeat("a line that matches the pattern\n", 2000))
	}
	res, err := e.call(t, "grep", map[string]any{"pattern": "matches", "output_mode": "content", "head_limit": 0})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) > grepMaxOutput+500 {
		t.Errorf("output is %d characters, want at most about %d", len(res.Content), grepMaxOutput)
	}
	if !strings.Contains(res.Content, "(output cut at 100000 characters") {
		t.Errorf("result does not say the output was cut:\n%s", tail(res.Content))
	}
	res, err = e.call(t, "grep", map[string]any{"pattern": "matches", "output_mode": "content"})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(res.Content, ": a line"); n != grepDefaultLimit || !strings.Contains(res.Content, "pass offset=250") {
		t.Errorf("default limit: %d lines shown, want %d and a next-page note:\n%s", n, grepDefaultLimit, tail(res.Content))
	}
}

func tail(s string) string { return s[max(0, len(s)-600):] }
