package skills

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
)

func writeSkill(t testing.TB, ws, name, content string) string {
	t.Helper()
	dir := filepath.Join(ws, "skills", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func skillDoc(front, body string) string { return "---\n" + front + "\n---\n\n" + body + "\n" }

// env is a fake environment: the binaries on PATH and the variables set.
type env struct {
	bins map[string]bool
	vars map[string]string
}

func (e env) options(ws string, builtin fs.FS) Options {
	return Options{
		Workspace: ws,
		Builtin:   builtin,
		GOOS:      "linux",
		LookPath: func(f string) (string, error) {
			if e.bins[f] {
				return "/usr/bin/" + f, nil
			}
			return "", errors.New("not found")
		},
		LookupEnv: func(k string) (string, bool) { v, ok := e.vars[k]; return v, ok },
	}
}

func names(skills []Skill) []string {
	var out []string
	for _, s := range skills {
		out = append(out, s.Name+"@"+s.Source)
	}
	return out
}

func TestEmbeddedBuiltins(t *testing.T) {
	ws := t.TempDir()
	l := New(env{bins: map[string]bool{"gh": true, "tmux": true}}.options(ws, nil))
	if p := l.Problems(); len(p) != 0 {
		t.Fatalf("built-in problems: %v", p)
	}
	want := []string{"cron@builtin", "github@builtin", "memory@builtin", "skill-creator@builtin", "summarize@builtin", "tmux@builtin", "weather@builtin"}
	if diff := cmp.Diff(want, names(l.Skills())); diff != "" {
		t.Errorf("built-ins (-want +got):\n%s", diff)
	}
	for _, s := range l.Skills() {
		if s.Description == "" || s.Body == "" {
			t.Errorf("%s: empty description or body", s.Name)
		}
		data, err := os.ReadFile(s.Path)
		if err != nil {
			t.Errorf("%s: copy not readable: %v", s.Name, err)
			continue
		}
		orig, _ := fs.ReadFile(builtinFS(), s.Name+"/"+FileName)
		if !bytes.Equal(data, orig) {
			t.Errorf("%s: copy differs from the embedded file", s.Name)
		}
		if rel, _ := filepath.Rel(ws, s.Path); strings.HasPrefix(rel, "..") {
			t.Errorf("%s: path %s is outside the workspace", s.Name, s.Path)
		}
	}
	if on := l.AlwaysOn(); !strings.HasPrefix(on, "### Skill: memory\n\n# Memory") || strings.Contains(on, "always: true") {
		t.Errorf("AlwaysOn should hold the memory skill without frontmatter:\n%.200s", on)
	}
	if idx := l.Index(); strings.Contains(idx, `name="memory"`) || !strings.Contains(idx, `name="github" available="true"`) {
		t.Errorf("Index:\n%s", idx)
	}
	gh, _ := l.Get("github")
	if diff := cmp.Diff([]string{"gh"}, gh.Bins); diff != "" {
		t.Errorf("github requires (-want +got):\n%s", diff)
	}

	// A second start leaves identical copies untouched.
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(gh.Path, old, old); err != nil {
		t.Fatal(err)
	}
	New(env{}.options(ws, nil))
	if fi, err := os.Stat(gh.Path); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("identical copy rewritten (mtime %v)", fi.ModTime())
	}
	// A stale copy is replaced.
	if err := os.WriteFile(gh.Path, []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	New(env{}.options(ws, nil))
	if data, _ := os.ReadFile(gh.Path); string(data) == "stale" {
		t.Error("stale copy not refreshed")
	}
}

var testBuiltins = fstest.MapFS{
	"alpha/SKILL.md":       {Data: []byte(skillDoc("name: alpha\ndescription: Built-in alpha.", "Alpha body."))},
	"beta/SKILL.md":        {Data: []byte(skillDoc("name: beta\ndescription: Built-in beta.\nalways: true", "Beta body."))},
	"beta/reference.md":    {Data: []byte("more beta")},
	"gamma/SKILL.md":       {Data: []byte(skillDoc("name: gamma\ndescription: Built-in gamma.\nrequires:\n  bins: [gammactl]", "Gamma body."))},
	"not-a-skill.txt":      {Data: []byte("ignored")},
	"delta/notes-only.txt": {Data: []byte("no SKILL.md here")},
}

func TestWorkspaceOverridesBuiltin(t *testing.T) {
	ws := t.TempDir()
	path := writeSkill(t, ws, "alpha", skillDoc("name: alpha\ndescription: My own alpha.", "Mine."))
	writeSkill(t, ws, "omega", skillDoc("description: Workspace only.", "Omega."))
	l := New(env{}.options(ws, testBuiltins))

	want := []string{"alpha@workspace", "beta@builtin", "gamma@builtin", "omega@workspace"}
	if diff := cmp.Diff(want, names(l.Skills())); diff != "" {
		t.Errorf("skills (-want +got):\n%s", diff)
	}
	a, _ := l.Get("alpha")
	if a.Description != "My own alpha." || a.Path != path {
		t.Errorf("alpha = %q at %s, want the workspace one at %s", a.Description, a.Path, path)
	}
	if _, err := os.Stat(filepath.Join(ws, BuiltinDir, "beta", "reference.md")); err != nil {
		t.Errorf("built-in resources not copied: %v", err)
	}
	if p := l.Problems(); len(p) != 0 {
		t.Errorf("problems: %v", p)
	}
}

func TestAlwaysAndIndex(t *testing.T) {
	ws := t.TempDir()
	writeSkill(t, ws, "zeta", skillDoc("description: Always but needs a tool.\nalways: true\nrequires: {bins: [zetactl]}", "Zeta body."))
	writeSkill(t, ws, "eta", skillDoc("description: Always & <ok>.\nalways: true", "Eta body."))
	l := New(env{}.options(ws, testBuiltins))

	wantOn := "### Skill: beta\n\nBeta body.\n\n### Skill: eta\n\nEta body."
	if diff := cmp.Diff(wantOn, l.AlwaysOn()); diff != "" {
		t.Errorf("AlwaysOn (-want +got):\n%s", diff)
	}
	b := filepath.Join(ws, BuiltinDir)
	wantIdx := `<skills>
  <skill name="alpha" available="true" path="` + filepath.Join(b, "alpha", FileName) + `">
    <description>Built-in alpha.</description>
  </skill>
  <skill name="gamma" available="false" path="` + filepath.Join(b, "gamma", FileName) + `">
    <description>Built-in gamma.</description>
    <missing>bin:gammactl</missing>
  </skill>
  <skill name="zeta" available="false" path="` + filepath.Join(ws, "skills", "zeta", FileName) + `">
    <description>Always but needs a tool.</description>
    <missing>bin:zetactl</missing>
  </skill>
</skills>`
	if diff := cmp.Diff(wantIdx, l.Index()); diff != "" {
		t.Errorf("Index (-want +got):\n%s", diff)
	}
}

func TestIndexEscapes(t *testing.T) {
	ws := t.TempDir()
	writeSkill(t, ws, "x", skillDoc(`description: "Use <b> & \"quotes\"\nacross lines"`, "X."))
	l := New(Options{Workspace: ws, NoBuiltin: true})
	want := `<description>Use &lt;b&gt; &amp; &quot;quotes&quot; across lines</description>`
	if idx := l.Index(); !strings.Contains(idx, want) {
		t.Errorf("Index = %s, want it to contain %s", idx, want)
	}
}

func TestRequirements(t *testing.T) {
	tests := []struct {
		name        string
		front       string
		env         env
		wantListed  bool
		wantMissing []string
	}{
		{"no requirements", "description: d", env{}, true, nil},
		{"bin present", "description: d\nrequires: {bins: [gh]}", env{bins: map[string]bool{"gh": true}}, true, nil},
		{"bin missing", "description: d\nrequires: {bins: [gh, jq]}", env{bins: map[string]bool{"jq": true}}, true, []string{"bin:gh"}},
		{"env set", "description: d\nrequires: {env: [TOKEN]}", env{vars: map[string]string{"TOKEN": "x"}}, true, nil},
		{"env unset", "description: d\nrequires: {env: [TOKEN]}", env{}, true, []string{"env:TOKEN"}},
		{"env empty", "description: d\nrequires: {env: [TOKEN]}", env{vars: map[string]string{"TOKEN": ""}}, true, []string{"env:TOKEN"}},
		{"bins and env", "description: d\nrequires:\n  bins: gh\n  env: [A, B]", env{vars: map[string]string{"B": "1"}}, true, []string{"bin:gh", "env:A"}},
		{"os matches", "description: d\nos: [linux, darwin]", env{}, true, nil},
		{"os as a string", "description: d\nos: linux", env{}, true, nil},
		{"os mismatch hides", "description: d\nos: [darwin, win32]", env{}, false, nil},
		{"python nanobot metadata", `description: d
metadata: {"nanobot":{"emoji":"🐙","requires":{"bins":["gh"]},"os":["linux"]}}`, env{}, true, []string{"bin:gh"}},
		{"metadata as a JSON string", `description: d
metadata: '{"nanobot":{"requires":{"env":["TOKEN"]}}}'`, env{}, true, []string{"env:TOKEN"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			writeSkill(t, ws, "s", skillDoc(tt.front, "Body."))
			l := New(tt.env.options(ws, fstest.MapFS{}))
			if p := l.Problems(); len(p) != 0 {
				t.Fatalf("problems: %v", p)
			}
			s, listed := l.Get("s")
			if listed != tt.wantListed {
				t.Fatalf("listed = %v, want %v", listed, tt.wantListed)
			}
			if diff := cmp.Diff(tt.wantMissing, s.Missing); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
			if got := strings.Contains(l.Index(), `available="false"`); listed && got != (len(tt.wantMissing) > 0) {
				t.Errorf("Index availability wrong:\n%s", l.Index())
			}
		})
	}
}

// logBuffer is a concurrency-safe log sink.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestFrontmatterProblems(t *testing.T) {
	tests := []struct {
		name       string
		content    string
		wantLoaded bool
		wantErr    string
	}{
		{"invalid yaml", "---\ndescription: [unclosed\n---\nBody.\n", false, "frontmatter"},
		{"not closed", "---\ndescription: d\nBody without end.\n", false, "not closed"},
		{"wrong type", "---\ndescription: d\nrequires: {bins: {a: b}}\n---\nBody.\n", false, "frontmatter"},
		{"no frontmatter", "# Just markdown\n\nSteps.\n", true, "no YAML frontmatter"},
		{"name differs", skillDoc("name: other\ndescription: d", "Body."), true, "differs from the folder name"},
		{"no description", skillDoc("name: broken", "Body."), true, "no description"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			path := writeSkill(t, ws, "broken", tt.content)
			writeSkill(t, ws, "good", skillDoc("description: Fine.", "Good body."))
			var logs logBuffer
			opts := env{}.options(ws, testBuiltins)
			opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			l := New(opts)

			for range 3 { // scans must not repeat the warning
				_ = l.Index()
			}
			probs := l.Problems()
			if len(probs) != 1 || probs[0].Path != path || !strings.Contains(probs[0].Error(), tt.wantErr) {
				t.Fatalf("Problems() = %v, want one for %s containing %q", probs, path, tt.wantErr)
			}
			if got := strings.Count(logs.String(), "skill problem"); got != 1 {
				t.Errorf("logged %d warnings, want 1:\n%s", got, logs.String())
			}
			if !strings.Contains(logs.String(), path) {
				t.Errorf("warning does not name %s:\n%s", path, logs.String())
			}
			if _, loaded := l.Get("broken"); loaded != tt.wantLoaded {
				t.Errorf("broken skill loaded = %v, want %v", loaded, tt.wantLoaded)
			}
			if !strings.Contains(l.Index(), `name="good"`) {
				t.Error("a broken skill hid the good one")
			}
		})
	}
}

func TestBrokenOverrideFallsBackToBuiltin(t *testing.T) {
	ws := t.TempDir()
	writeSkill(t, ws, "alpha", "---\n: : :\n---\n")
	l := New(env{}.options(ws, testBuiltins))
	if a, _ := l.Get("alpha"); a.Source != SourceBuiltin {
		t.Errorf("alpha source = %q, want the built-in while the override is broken", a.Source)
	}
}

func TestRescanPicksUpChanges(t *testing.T) {
	ws := t.TempDir()
	l := New(env{}.options(ws, testBuiltins))
	if strings.Contains(l.Index(), "fresh") {
		t.Fatal("setup")
	}
	path := writeSkill(t, ws, "fresh", skillDoc("description: Added at runtime.", "Fresh."))
	if !strings.Contains(l.Index(), `<skill name="fresh"`) {
		t.Errorf("new skill not picked up:\n%s", l.Index())
	}
	if err := os.WriteFile(path, []byte(skillDoc("description: Edited, and longer now.", "Fresh.")), 0o644); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(l.Index(), "Edited, and longer now.") {
		t.Errorf("edit not picked up:\n%s", l.Index())
	}
	if err := os.WriteFile(path, []byte(skillDoc("description: Edited, same size!!!!!.", "Fresh.")), 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour) // same size: the mtime tells
	if err := os.Chtimes(path, future, future); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(l.Index(), "Edited, same size!!!!!.") {
		t.Errorf("same-size edit not picked up:\n%s", l.Index())
	}
	if err := os.RemoveAll(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(l.Index(), "fresh") {
		t.Error("removed skill still listed")
	}
}

func TestStableOutput(t *testing.T) {
	ws := t.TempDir()
	for i := range 12 {
		writeSkill(t, ws, fmt.Sprintf("s%02d", (i*7)%12), skillDoc(fmt.Sprintf("description: Skill %d.\nalways: %t", i, i%4 == 0), "Body."))
	}
	l := New(env{}.options(ws, testBuiltins))
	idx, on := l.Index(), l.AlwaysOn()
	for range 5 {
		if l.Index() != idx || l.AlwaysOn() != on {
			t.Fatal("output changed between calls with no file change")
		}
	}
	l2 := New(env{}.options(ws, testBuiltins))
	if l2.Index() != idx || l2.AlwaysOn() != on {
		t.Error("a second loader renders differently")
	}
}

func TestConcurrentUse(t *testing.T) {
	ws := t.TempDir()
	writeSkill(t, ws, "a", skillDoc("description: A.", "A."))
	l := New(env{}.options(ws, testBuiltins))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if i == 0 {
				writeSkill(t, ws, "b", skillDoc("description: B.", "B."))
			}
			_ = l.Index() + l.AlwaysOn()
		})
	}
	wg.Wait()
	if !strings.Contains(l.Index(), `name="b"`) {
		t.Error("skill b missing")
	}
}

// BenchmarkRescan measures what each request pays: Index and AlwaysOn over
// 20 workspace skills plus the built-ins, files unchanged.
func BenchmarkRescan(b *testing.B) {
	ws := b.TempDir()
	for i := range 20 {
		writeSkill(b, ws, fmt.Sprintf("skill-%02d", i), skillDoc(
			fmt.Sprintf("description: Benchmark skill %d does a thing.\nalways: %t\nrequires: {bins: [sh], env: [HOME]}", i, i == 0),
			strings.Repeat("Some instructions.\n", 40)))
	}
	l := New(Options{Workspace: ws})
	b.ResetTimer()
	for b.Loop() {
		_ = l.AlwaysOn()
		_ = l.Index()
	}
}
