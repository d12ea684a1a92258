package shell

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/tools/sandbox"
	"github.com/nanobot-go/nanobot/tools/sandbox/sandboxtest"
)

// The security battery: what a command the model runs through exec must
// not be able to do under each sandbox mode this machine provides
// (landlock, bwrap; a missing one is skipped with the reason). Every case
// first runs with the sandbox off and must succeed there, so a pass shows
// the sandbox stopped it — not a typo in the test. restrictToWorkspace is
// off throughout: the kernel is the boundary, not the friendly checks.

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
	write(filepath.Join(in.home, ".bash_history"), "BATTERY-SECRET")
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

// forModes runs f once per confining mode, skipping (with the reason) the
// modes this machine cannot provide.
func forModes(t *testing.T, f func(t *testing.T, mode sandbox.Mode)) {
	for _, mode := range sandboxtest.ConfiningModes {
		t.Run(string(mode), func(t *testing.T) {
			sandboxtest.Require(t, mode)
			f(t, mode)
		})
	}
}

// outsider starts a process outside any sandbox (standing for the gateway
// or another of the user's programs) with a secret in its environment and
// returns its PID.
func outsider(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", sandboxtest.Marker())
	cmd.Env = []string{"OPENAI_API_KEY=sk-BATTERY-SECRET"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	return cmd.Process.Pid
}

func TestBatteryFileAccess(t *testing.T) {
	in := newInstance(t)
	if err := os.Symlink(filepath.Join(in.outside, "notes.txt"), filepath.Join(in.ws, "planted-link")); err != nil {
		t.Fatal(err)
	}
	sharedTmp := filepath.Join("/tmp", "nanobot-battery-"+sandboxtest.Marker())
	t.Cleanup(func() { os.Remove(sharedTmp) })
	gateway := outsider(t)
	fileAppeared := func(p string) func(string, error) bool {
		return func(string, error) bool { _, err := os.Stat(p); return err == nil }
	}
	cases := []struct {
		name, command string
		// escaped judges from the effect on the host (default: the
		// command succeeded and printed the secret).
		escaped func(out string, err error) bool
	}{
		{"read the config with the keys", "cat ~/.nanobot/config.json", nil},
		{"read the config by a relative path", "cat ../config.json", nil},
		{"read the sessions", "cat ../sessions/cli_direct.jsonl", nil},
		{"cd .. and read", "cd .. && cat config.json", nil},
		{"read another user's home", "cat " + filepath.Join(in.other, "diary.txt"), nil},
		{"follow a symlink planted in the workspace", "cat planted-link", nil},
		{"list the home folder", "ls -a ~ | grep -q bash_history && echo BATTERY-SECRET", nil},
		{"write outside the workspace", "echo BATTERY-SECRET > " + filepath.Join(in.outside, "new.txt"), fileAppeared(filepath.Join(in.outside, "new.txt"))},
		{"write into the shared /tmp", "echo BATTERY-SECRET > " + sharedTmp, fileAppeared(sharedTmp)},
		{"replace the config", "echo '{}' > ~/.nanobot/config.json", func(string, error) bool {
			b, _ := os.ReadFile(in.config)
			return !strings.Contains(string(b), "sk-BATTERY-SECRET")
		}},
		{"read another process's environment", fmt.Sprintf("tr '\\0' '\\n' < /proc/%d/environ", gateway), nil},
	}
	reset := func() {
		_ = os.WriteFile(in.config, []byte(`{"providers":{"openai":{"apiKey":"sk-BATTERY-SECRET"}}}`), 0o644)
		os.Remove(filepath.Join(in.outside, "new.txt"))
		os.Remove(sharedTmp)
	}
	forModes(t, func(t *testing.T, mode sandbox.Mode) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				escaped := c.escaped
				if escaped == nil {
					escaped = func(out string, err error) bool { return err == nil && strings.Contains(out, "BATTERY-SECRET") }
				}
				// Without the sandbox the command succeeds: the case is real.
				reset()
				out, err := run(t, in.tool(t, sandbox.ModeNone, nil), map[string]any{"command": c.command})
				if !escaped(out, err) {
					t.Fatalf("unconfined, the case does not even work (%v): %s", err, out)
				}
				reset()
				out, err = run(t, in.tool(t, mode, nil), map[string]any{"command": c.command})
				if escaped(out, err) {
					t.Fatalf("under the %s sandbox the command got through (%v): %s", mode, err, out)
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
		out, err := run(t, in.tool(t, mode, nil), map[string]any{"command": "echo hi > a.txt && cat a.txt && mkdir -p d/e && ls d && t=$(mktemp) && echo tmp-ok > $t && cat $t && ls /usr/bin | head -1 >/dev/null && echo done"})
		if err != nil || !strings.Contains(out, "hi") || !strings.Contains(out, "tmp-ok") || !strings.Contains(out, "done") {
			t.Fatalf("ordinary work in the workspace fails under the sandbox (%v): %s", err, out)
		}
		// allowPaths widens it for users who want that.
		tool := in.tool(t, mode, func(o *Options) { o.ReadOnly = []string{in.outside} })
		if out, err := run(t, tool, map[string]any{"command": "cat " + filepath.Join(in.outside, "notes.txt")}); err != nil || !strings.Contains(out, "BATTERY-SECRET") {
			t.Errorf("allowPaths.readOnly did not allow reading (%v): %s", err, out)
		}
		if out, err := run(t, tool, map[string]any{"command": "echo x > " + filepath.Join(in.outside, "w.txt")}); err == nil && !strings.Contains(out, "Permission denied") && !strings.Contains(out, "Read-only") {
			t.Errorf("allowPaths.readOnly allowed writing: %s", out)
		}
		if _, err := os.Stat(filepath.Join(in.outside, "w.txt")); err == nil {
			t.Error("allowPaths.readOnly allowed writing: the file is there")
		}
	})
}

// TestBatteryNetwork: with the network on a command reaches another
// process's server on loopback but not a port of the gateway's own (here
// the test process's) where the sandbox can wall it off; with the network
// off it reaches neither.
func TestBatteryNetwork(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("needs bash for /dev/tcp")
	}
	own, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	go sandboxtest.Serve(own, "BATTERY-SECRET\n")
	connect := func(port int) string {
		return fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && head -1 <&3", port)
	}
	other, gateway := connect(sandboxtest.ForeignServer(t, "BATTERY-SECRET\n")), connect(own.Addr().(*net.TCPAddr).Port)
	in := newInstance(t)
	shellOpt := func(deny bool) func(*Options) {
		return func(o *Options) { o.Shell, o.DenyNetwork = bash, deny }
	}
	forModes(t, func(t *testing.T, mode sandbox.Mode) {
		if mode == sandbox.ModeLandlock && !sandbox.Namespaces() && sandbox.LandlockABI() < 4 {
			t.Skipf("network: false needs Landlock ABI 4 or user namespaces; this kernel has ABI %d and no user namespaces", sandbox.LandlockABI())
		}
		if out, err := run(t, in.tool(t, mode, shellOpt(false)), map[string]any{"command": other}); err != nil || !strings.Contains(out, "BATTERY-SECRET") {
			t.Fatalf("with network allowed the connection fails (%v): %s", err, out)
		}
		if ok, why := sandbox.PortWall(mode); !ok {
			t.Logf("no port wall here (%s): the gateway's own port is not tried", why)
		} else if out, _ := run(t, in.tool(t, mode, shellOpt(false)), map[string]any{"command": gateway}); strings.Contains(out, "BATTERY-SECRET") || !strings.Contains(out, "Permission denied") {
			t.Errorf("with network allowed, the gateway's own port: got %q, want Permission denied", out)
		}
		for _, command := range []string{other, gateway} {
			out, err := run(t, in.tool(t, mode, shellOpt(true)), map[string]any{"command": command})
			if err == nil && strings.Contains(out, "BATTERY-SECRET") {
				t.Fatalf("network: false did not stop a TCP connection: %s", out)
			}
		}
	})
}

func TestBatteryForkBomb(t *testing.T) {
	if !sandbox.ProcessLimitEnforced() {
		t.Skip("running as root without a writable pids cgroup: no process limit can bind here (RLIMIT_NPROC does not apply to root)")
	}
	forModes(t, func(t *testing.T, mode sandbox.Mode) {
		in := newInstance(t)
		// The deny list refuses fork bombs already; lift it to test the kernel.
		tool := in.tool(t, mode, func(o *Options) {
			o.Limits, o.AllowPatterns = sandbox.Limits{Processes: 40}, []string{"bomb"}
		})
		start := time.Now()
		out, err := run(t, tool, map[string]any{"command": "bomb() { bomb | bomb & }; bomb; sleep 2; echo survived", "timeout": 4})
		took := time.Since(start)
		t.Logf("fork bomb ended after %s: %v\n%.300s", took, err, out)
		if took > 15*time.Second {
			t.Errorf("the fork bomb took %s to end", took)
		}
		// On a loaded machine the bomb may outlive its 4 s timeout; the
		// output so far then travels in the error.
		seen := out
		if err != nil {
			seen += "\n" + err.Error()
		}
		if !strings.Contains(seen, "Resource temporarily unavailable") && !strings.Contains(seen, "retry") && !strings.Contains(strings.ToLower(seen), "fork") {
			t.Errorf("no sign that the process limit stopped the bomb: %.500s", seen)
		}
		// The machine (this process) stays responsive and can start work.
		if out, err := run(t, in.tool(t, mode, nil), map[string]any{"command": "echo alive"}); err != nil || !strings.Contains(out, "alive") {
			t.Fatalf("after the bomb: %v %s", err, out)
		}
	})
}

func TestBatteryIgnoresSIGTERM(t *testing.T) {
	forModes(t, func(t *testing.T, mode sandbox.Mode) {
		in := newInstance(t)
		tool := in.tool(t, mode, nil)
		_, m, err := sandboxtest.TimeoutAfterStart(t, "sleep", func(ts int, m string) error {
			_, err := run(t, tool, map[string]any{
				"command": "trap '' TERM; (trap '' TERM; sleep " + m + ") & sleep 1000",
				"timeout": ts,
			})
			return err
		})
		if err == nil || !strings.Contains(err.Error(), "timed out") {
			t.Fatalf("want a timeout, got %v", err)
		}
		sandboxtest.WaitNoProcs(t, m, 10*time.Second)
	})
}
