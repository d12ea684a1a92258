package shell

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/sandbox/sandboxtest"
)

func newTool(t *testing.T, opts Options) (*Tool, string) {
	t.Helper()
	if opts.Workspace == "" {
		ws, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		opts.Workspace = ws
	}
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	tool, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return tool, opts.Workspace
}

func run(t *testing.T, tool *Tool, args map[string]any) (string, error) {
	t.Helper()
	r := tools.NewRegistry()
	if err := r.Register(tool); err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background(), "exec", args)
	return res.Content, err
}

func TestExecOutput(t *testing.T) {
	tool, ws := newTool(t, Options{})
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"stdout", map[string]any{"command": "echo hello"}, "STDOUT:\nhello\n\nExit code: 0"},
		{"stderr and exit code", map[string]any{"command": "echo out; echo err >&2; exit 3"}, "STDOUT:\nout\n\nSTDERR:\nerr\n\nExit code: 3"},
		{"no output", map[string]any{"command": "true"}, "(no output)\n\nExit code: 0"},
		{"runs in workspace", map[string]any{"command": "pwd"}, "STDOUT:\n" + ws + "\n\nExit code: 0"},
		{"working_dir", map[string]any{"command": "pwd", "working_dir": "sub"}, "STDOUT:\n" + filepath.Join(ws, "sub") + "\n\nExit code: 0"},
		{"stdin is empty", map[string]any{"command": "cat; echo done"}, "STDOUT:\ndone\n\nExit code: 0"},
		{"timeout as string", map[string]any{"command": "echo t", "timeout": "5"}, "STDOUT:\nt\n\nExit code: 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := run(t, tool, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("output:\n%q\nwant:\n%q", got, tt.want)
			}
		})
	}
	if _, err := run(t, tool, map[string]any{"command": "ls", "working_dir": "missing"}); err == nil {
		t.Error("missing working_dir: want error")
	}
}

func TestExecTruncation(t *testing.T) {
	tool, _ := newTool(t, Options{MaxOutputChars: 100})
	got, err := run(t, tool, map[string]any{"command": "seq 1 100000"})
	if err != nil {
		t.Fatal(err)
	}
	var full strings.Builder
	for i := 1; i <= 100000; i++ {
		fmt.Fprintf(&full, "%d\n", i)
	}
	doc := "STDOUT:\n" + full.String()
	wantCut := len(doc) - 200
	if !strings.HasPrefix(got, doc[:100]) {
		t.Errorf("head not kept:\n%.200s", got)
	}
	if !strings.Contains(got, fmt.Sprintf("... [%d characters truncated] ...", wantCut)) {
		t.Errorf("cut count missing or wrong (want %d):\n%s", wantCut, got)
	}
	if !strings.HasSuffix(got, "99999\n100000\n\nExit code: 0") {
		t.Errorf("tail not kept:\n%s", got[len(got)-200:])
	}
	if len(got) > 400 {
		t.Errorf("output is %d characters, want about 2x100", len(got))
	}
}

func TestTruncateMultibyte(t *testing.T) {
	c := newCapture(4 * 10)
	fmt.Fprint(c, strings.Repeat("ä", 1000))
	got := render(c, newCapture(40), 10)
	if !strings.Contains(got, "characters truncated") || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("render() = %q", got)
	}
	head, _, _ := strings.Cut(got, "\n\n...")
	if n := len([]rune(head)); n != 10 {
		t.Errorf("head has %d characters, want 10", n)
	}
}

func TestExecTimeoutKillsGrandchildren(t *testing.T) {
	tool, _ := newTool(t, Options{})
	var start time.Time
	ts, m, err := sandboxtest.TimeoutAfterStart(t, "sleep", func(ts int, m string) error {
		start = time.Now()
		_, err := run(t, tool, map[string]any{
			"command": "sh -c 'sleep " + m + " & wait' ; echo never",
			"timeout": ts,
		})
		return err
	})
	if want := fmt.Sprintf("timed out after %ds", ts); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v, want %q", err, want)
	}
	if elapsed := time.Since(start); elapsed > time.Duration(ts+7)*time.Second {
		t.Errorf("took %s to time out after %d s", elapsed, ts)
	}
	sandboxtest.WaitNoProcs(t, m, 10*time.Second)
}

func TestExecCancel(t *testing.T) {
	tool, _ := newTool(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := tool.Execute(ctx, map[string]any{"command": "echo started; sleep 1000"})
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "cancelled") {
			t.Errorf("error = %v, want cancelled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Execute did not return after cancel")
	}
}

func TestExecBackgroundHoldingOutputIsKilled(t *testing.T) {
	tool, ws := newTool(t, Options{})
	m := sandboxtest.Marker()
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		// The shell waits for the test to have seen the sleep, then exits
		// with it still running and holding the output.
		out, err := run(t, tool, map[string]any{"command": "sleep " + m + " & while [ ! -e go ]; do sleep 0.01; done; echo hi"})
		done <- result{out, err}
	}()
	sandboxtest.WaitProcs(t, "sleep", m, 10*time.Second)
	if err := os.WriteFile(filepath.Join(ws, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !strings.Contains(r.out, "hi") {
		t.Errorf("output = %q", r.out)
	}
	sandboxtest.WaitNoProcs(t, m, 10*time.Second)
}

func TestExecRefusals(t *testing.T) {
	tool, ws := newTool(t, Options{
		RestrictToWorkspace: true,
		DenyPatterns:        []string{`\bsecret-tool\b`},
		AllowPatterns:       []string{`^format --version`},
	})
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "x"), []byte("outside data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(ws, outside)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		command string
		workdir string
		want    string
	}{
		{"builtin deny", "rm -rf ~", "", "safety guard: recursive deletion"},
		{"user deny", "secret-tool lookup", "", "deny pattern"},
		{"cd out", "cd ..; cat x", "", "restrictToWorkspace"},
		{"relative escape", "cat " + rel + "/x", "", "outside the workspace"},
		{"absolute path", "cat " + filepath.Join(outside, "x"), "", "outside the workspace"},
		{"symlink", "cat link/x", "", "outside the workspace"},
		{"working_dir outside", "ls", "..", "working_dir"},
		{"working_dir via symlink", "ls", "link", "working_dir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]any{"command": tt.command}
			if tt.workdir != "" {
				args["working_dir"] = tt.workdir
			}
			out, err := run(t, tool, args)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v (output %q), want it to contain %q", err, out, tt.want)
			}
			if strings.Contains(err.Error(), "outside data") {
				t.Error("the refused command ran")
			}
		})
	}
	// An allow pattern lets a command through the built-in "format" rule.
	out, err := run(t, tool, map[string]any{"command": "format --version 2>/dev/null; echo allowed"})
	if err != nil || !strings.Contains(out, "allowed") {
		t.Errorf("allowed command: %q, %v", out, err)
	}
}

func TestExecEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-fake-parent-secret")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-fake")
	t.Setenv("MY_TOOL_TOKEN", "passed-on-purpose")
	tool, ws := newTool(t, Options{RestrictToWorkspace: true, ExtraEnv: []string{"MY_TOOL_TOKEN", "STATIC=1"}})
	out, err := run(t, tool, map[string]any{"command": "env"})
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"OPENAI_API_KEY", "sk-fake-parent-secret", "ANTHROPIC_API_KEY"} {
		if strings.Contains(out, secret) {
			t.Errorf("environment leaks %s:\n%s", secret, out)
		}
	}
	for _, want := range []string{"HOME=" + ws + "\n", "TMPDIR=" + filepath.Join(ws, ".tmp") + "\n", "MY_TOOL_TOKEN=passed-on-purpose", "STATIC=1", "PATH="} {
		if !strings.Contains(out, want) {
			t.Errorf("environment lacks %q:\n%s", want, out)
		}
	}
}

func TestNewErrors(t *testing.T) {
	for name, opts := range map[string]Options{
		"no workspace": {},
		"bad deny":     {Workspace: t.TempDir(), DenyPatterns: []string{"(["}},
		"bad sandbox":  {Workspace: t.TempDir(), Sandbox: "docker"},
	} {
		if _, err := New(opts); err == nil {
			t.Errorf("%s: New() succeeded", name)
		}
	}
}
