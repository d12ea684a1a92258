package shell

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/tools/sandbox"
	"github.com/nanobot-go/nanobot/tools/sandbox/sandboxtest"
)

// The security battery: what a command the model runs through exec must
// not be able to do under the default sandbox. Every case first runs with
// the sandbox off and must succeed there, so a pass shows the sandbox
// stopped it — not a typo in the test. restrictToWorkspace is off
// throughout: the kernel is the boundary, not the friendly checks.

// instance lays out a nanobot instance as on a real machine: a home with
// ~/.nanobot/config.json (the keys) and the workspace inside ~/.nanobot,
// plus another user's home and a plain folder outside.
type instance struct {
	home, config, ws, other, outside string
}

func newInstance(t *testing.T) instance {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	in := instance{
		home:    filepath.Join(root, "home", "me"),
		other:   filepath.Join(root, "home", "someone-else"),
		outside: filepath.Join(root, "elsewhere"),
	}
	in.config = filepath.Join(in.home, ".nanobot", "config.json")
	in.ws = filepath.Join(in.home, ".nanobot", "workspace")
	for _, d := range []string{in.ws, in.other, in.outside, filepath.Join(in.home, ".nanobot", "sessions")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(in.config, `{"providers":{"openai":{"apiKey":"sk-BATTERY-SECRET"}}}`)
	write(filepath.Join(in.home, ".nanobot", "sessions", "cli_direct.jsonl"), `{"role":"user","content":"BATTERY-SECRET"}`)
	write(filepath.Join(in.other, "diary.txt"), "BATTERY-SECRET")
	write(filepath.Join(in.outside, "notes.txt"), "BATTERY-SECRET")
	return in
}

func (in instance) tool(t *testing.T, mode sandbox.Mode, edit func(*Options)) *Tool {
	t.Helper()
	opts := Options{Workspace: in.ws, Sandbox: mode, ExtraEnv: []string{"HOME=" + in.home}}
	if edit != nil {
		edit(&opts)
	}
	tool, _ := newTool(t, opts)
	return tool
}

func requireLandlock(t *testing.T) {
	t.Helper()
	if _, err := sandbox.ResolveMode(sandbox.ModeLandlock); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the security battery needs Landlock: %v", err)
		}
		t.Skipf("the security battery needs Landlock: %v", err)
	}
}

func TestBatteryFileAccess(t *testing.T) {
	requireLandlock(t)
	in := newInstance(t)
	if err := os.Symlink(filepath.Join(in.outside, "notes.txt"), filepath.Join(in.ws, "planted-link")); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, command string }{
		{"read the config with the keys", "cat ~/.nanobot/config.json"},
		{"read the config by a relative path", "cat ../config.json"},
		{"read the sessions", "cat ../sessions/cli_direct.jsonl"},
		{"cd .. and read", "cd .. && cat config.json"},
		{"read another user's home", "cat " + filepath.Join(in.other, "diary.txt")},
		{"follow a symlink planted in the workspace", "cat planted-link"},
		{"list the home folder", "ls -a ~ | grep -q .nanobot && echo BATTERY-SECRET"},
		{"write outside the workspace", "echo BATTERY-SECRET > " + filepath.Join(in.outside, "new.txt") + " && cat " + filepath.Join(in.outside, "new.txt")},
		{"write into the shared /tmp", "f=/tmp/nanobot-battery-$$; echo BATTERY-SECRET > $f && cat $f && rm $f"},
		{"replace the config", "echo '{}' > ~/.nanobot/config.json && echo BATTERY-SECRET"},
		{"read the gateway's environment", "cat /proc/$PPID/environ /proc/1/environ | tr '\\0' '\\n' | grep -q . && echo BATTERY-SECRET"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Without the sandbox the command succeeds: the case is real.
			out, err := run(t, in.tool(t, sandbox.ModeNone, nil), map[string]any{"command": c.command})
			if err != nil || !strings.Contains(out, "BATTERY-SECRET") {
				t.Fatalf("unconfined, the case does not even work (%v): %s", err, out)
			}
			_ = os.WriteFile(in.config, []byte(`{"providers":{"openai":{"apiKey":"sk-BATTERY-SECRET"}}}`), 0o644)
			os.Remove(filepath.Join(in.outside, "new.txt"))

			out, err = run(t, in.tool(t, sandbox.ModeAuto, nil), map[string]any{"command": c.command})
			if err == nil && strings.Contains(out, "BATTERY-SECRET") {
				t.Fatalf("under the default sandbox the command succeeded: %s", out)
			}
			if _, err := os.Stat(filepath.Join(in.outside, "new.txt")); err == nil {
				t.Fatal("a file appeared outside the workspace")
			}
			if b, _ := os.ReadFile(in.config); !strings.Contains(string(b), "sk-BATTERY-SECRET") {
				t.Fatal("the config was changed")
			}
		})
	}
	// What the agent needs still works.
	out, err := run(t, in.tool(t, sandbox.ModeAuto, nil), map[string]any{"command": "echo hi > a.txt && cat a.txt && mkdir -p d/e && ls d && t=$(mktemp) && echo tmp-ok > $t && cat $t && ls /usr/bin | head -1 >/dev/null && echo done"})
	if err != nil || !strings.Contains(out, "hi") || !strings.Contains(out, "tmp-ok") || !strings.Contains(out, "done") {
		t.Fatalf("ordinary work in the workspace fails under the sandbox (%v): %s", err, out)
	}
	// allowPaths widens it for users who want that.
	tool := in.tool(t, sandbox.ModeAuto, func(o *Options) { o.ReadOnly = []string{in.outside} })
	if out, err := run(t, tool, map[string]any{"command": "cat " + filepath.Join(in.outside, "notes.txt")}); err != nil || !strings.Contains(out, "BATTERY-SECRET") {
		t.Errorf("allowPaths.readOnly did not allow reading (%v): %s", err, out)
	}
	if out, err := run(t, tool, map[string]any{"command": "echo x > " + filepath.Join(in.outside, "w.txt")}); err == nil && !strings.Contains(out, "Permission denied") {
		t.Errorf("allowPaths.readOnly allowed writing: %s", out)
	}
}

func TestBatteryNetwork(t *testing.T) {
	requireLandlock(t)
	if sandbox.LandlockABI() < 4 {
		t.Skipf("network: false needs Landlock ABI 4; this kernel has %d", sandbox.LandlockABI())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("BATTERY-SECRET\n"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("needs bash for /dev/tcp")
	}
	in := newInstance(t)
	command := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && head -1 <&3", port)
	shellOpt := func(deny bool) func(*Options) {
		return func(o *Options) { o.Shell, o.DenyNetwork = bash, deny }
	}
	if out, err := run(t, in.tool(t, sandbox.ModeAuto, shellOpt(false)), map[string]any{"command": command}); err != nil || !strings.Contains(out, "BATTERY-SECRET") {
		t.Fatalf("with network allowed the connection fails (%v): %s", err, out)
	}
	out, err := run(t, in.tool(t, sandbox.ModeAuto, shellOpt(true)), map[string]any{"command": command})
	if err == nil && strings.Contains(out, "BATTERY-SECRET") {
		t.Fatalf("network: false did not stop a TCP connection: %s", out)
	}
}

func TestBatteryForkBomb(t *testing.T) {
	requireLandlock(t)
	if !sandbox.ProcessLimitEnforced() {
		t.Skip("running as root without a writable pids cgroup: no process limit can bind here (RLIMIT_NPROC does not apply to root)")
	}
	in := newInstance(t)
	// The deny list refuses fork bombs already; lift it to test the kernel.
	tool := in.tool(t, sandbox.ModeAuto, func(o *Options) {
		o.Limits, o.AllowPatterns = sandbox.Limits{Processes: 40}, []string{"bomb"}
	})
	start := time.Now()
	out, err := run(t, tool, map[string]any{"command": "bomb() { bomb | bomb & }; bomb; sleep 2; echo survived", "timeout": 4})
	took := time.Since(start)
	t.Logf("fork bomb ended after %s: %v\n%.300s", took, err, out)
	if took > 15*time.Second {
		t.Errorf("the fork bomb took %s to end", took)
	}
	if !strings.Contains(out, "Resource temporarily unavailable") && !strings.Contains(out, "retry") && !strings.Contains(strings.ToLower(out), "fork") {
		t.Errorf("no sign that the process limit stopped the bomb: %.500s", out)
	}
	// The machine (this process) stays responsive and can start work.
	if out, err := run(t, in.tool(t, sandbox.ModeAuto, nil), map[string]any{"command": "echo alive"}); err != nil || !strings.Contains(out, "alive") {
		t.Fatalf("after the bomb: %v %s", err, out)
	}
}

func TestBatteryIgnoresSIGTERM(t *testing.T) {
	requireLandlock(t)
	in := newInstance(t)
	tool := in.tool(t, sandbox.ModeAuto, nil)
	_, err := run(t, tool, map[string]any{
		"command": "trap '' TERM; (trap '' TERM; sleep 1000) & echo $! > child.pid; sleep 1000",
		"timeout": 1,
	})
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("want a timeout, got %v", err)
	}
	pid, err := strconv.Atoi(sandboxtest.WaitFile(t, filepath.Join(in.ws, "child.pid"), 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	sandboxtest.WaitGone(t, pid, 10*time.Second)
}
