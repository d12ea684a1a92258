package battery

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/tools/sandbox"
	"github.com/nanobot-go/nanobot/tools/sandbox/sandboxtest"
)

// Secrets planted where the agent must not reach.
const (
	configSecret  = "sk-battery-config-key-0123456789"
	sessionSecret = "battery-session-secret-6612"
	otherSecret   = "battery-other-user-secret-4471"
	envSecret     = "battery-process-env-secret-9034"
)

// runServer is the stdio MCP server built by TestMain.
var runServer string

func TestMain(m *testing.M) {
	// NANOBOT_BATTERY_MCP_SERVER names a prebuilt server (for running the
	// battery as a user that cannot build).
	if runServer = os.Getenv("NANOBOT_BATTERY_MCP_SERVER"); runServer != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "battery-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	runServer = filepath.Join(dir, "runserver")
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	// Built without -race: the race runtime cannot start under the
	// sandbox's address-space limit.
	if out, err := exec.Command(goBin, "build", "-o", runServer, "./testdata/runserver").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the MCP test server: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fixture is a gateway's world: a home with ~/.nanobot (config with a key,
// sessions, the workspace), another user's home beside it.
type fixture struct {
	home, config, sessions, ws, other string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{home: filepath.Join(root, "home", "gw"), other: filepath.Join(root, "home", "other")}
	dot := filepath.Join(f.home, ".nanobot")
	f.config = filepath.Join(dot, "config.json")
	f.sessions = filepath.Join(dot, "sessions")
	f.ws = filepath.Join(dot, "workspace")
	for _, d := range []string{f.sessions, f.ws, f.other} {
		must(t, os.MkdirAll(d, 0o700))
	}
	must(t, os.WriteFile(filepath.Join(f.sessions, "telegram_42.jsonl"), []byte(`{"role":"user","content":"`+sessionSecret+`"}`+"\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(f.other, "secret.txt"), []byte(otherSecret+"\n"), 0o600))
	f.reset(t)
	t.Setenv("HOME", f.home)
	return f
}

// reset undoes what an escape may have changed.
func (f *fixture) reset(t *testing.T) {
	t.Helper()
	must(t, os.WriteFile(f.config, []byte(`{"providers": {"openai": {"apiKey": "`+configSecret+`"}}}`), 0o600))
	for _, p := range []string{filepath.Join(f.home, "dropped"), filepath.Join(f.ws, "planted"), filepath.Join(f.ws, "link"), filepath.Join(f.ws, "hardlink")} {
		must(t, os.RemoveAll(p))
	}
}

// outsider starts a process outside any sandbox (standing for the gateway
// or another of the user's programs) with a key in its environment.
func outsider(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", fmt.Sprintf("1000.%09d", rand.IntN(1e9)))
	cmd.Env = []string{"OPENAI_API_KEY=" + envSecret}
	must(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	return cmd.Process.Pid
}

// runFunc runs a shell command line inside the system under test (exec
// tool or MCP server) and returns everything it said, errors included.
type runFunc func(t *testing.T, command string, timeout int) string

// escape is one attempt to get out.
type escape struct {
	name    string
	command func(f *fixture, pid int) string
	// escaped reports whether the attempt worked, from its effect on the
	// host (or its output), not from its exit status.
	escaped func(t *testing.T, f *fixture, pid int, out string) bool
	setup   func(t *testing.T, f *fixture)
}

func contains(s string) func(*testing.T, *fixture, int, string) bool {
	return func(_ *testing.T, _ *fixture, _ int, out string) bool { return strings.Contains(out, s) }
}

func exists(rel string) func(*testing.T, *fixture, int, string) bool {
	return func(_ *testing.T, f *fixture, _ int, _ string) bool {
		_, err := os.Stat(filepath.Join(f.home, rel))
		return err == nil
	}
}

var escapes = []escape{
	{name: "read the config with the API keys",
		command: func(f *fixture, _ int) string { return "cat " + f.config },
		escaped: contains(configSecret)},
	{name: "read the sessions",
		command: func(f *fixture, _ int) string { return "cat " + f.sessions + "/*.jsonl" },
		escaped: contains(sessionSecret)},
	{name: "overwrite the config",
		command: func(f *fixture, _ int) string { return "echo '{\"hacked\": 1}' > " + f.config },
		escaped: func(t *testing.T, f *fixture, _ int, _ string) bool {
			b, _ := os.ReadFile(f.config)
			return strings.Contains(string(b), "hacked")
		}},
	{name: "write outside the workspace",
		command: func(f *fixture, _ int) string { return "echo x > " + filepath.Join(f.home, "dropped") },
		escaped: exists("dropped")},
	{name: "read another user's home",
		command: func(f *fixture, _ int) string { return "ls " + f.other + "; cat " + f.other + "/secret.txt" },
		escaped: contains(otherSecret)},
	{name: "follow a symlink planted in the workspace",
		setup: func(t *testing.T, f *fixture) {
			must(t, os.Symlink(f.config, filepath.Join(f.ws, "planted")))
		},
		command: func(*fixture, int) string { return "cat planted" },
		escaped: contains(configSecret)},
	{name: "follow a symlink made inside",
		command: func(f *fixture, _ int) string { return "ln -sfn " + f.other + " link && cat link/secret.txt" },
		escaped: contains(otherSecret)},
	{name: "hard-link the config into the workspace",
		command: func(f *fixture, _ int) string { return "ln " + f.config + " hardlink && cat hardlink" },
		escaped: contains(configSecret)},
	{name: "cd .. to the config folder",
		command: func(*fixture, int) string { return "cd .. && ls && cat config.json" },
		escaped: contains(configSecret)},
	{name: "cd ../.. and write",
		command: func(*fixture, int) string { return "cd ../.. && echo x > dropped" },
		escaped: exists("dropped")},
	{name: "read another process's environment",
		command: func(_ *fixture, pid int) string { return fmt.Sprintf("tr '\\0' '\\n' < /proc/%d/environ", pid) },
		escaped: contains(envSecret)},
	{name: "kill a process outside",
		command: func(_ *fixture, pid int) string { return fmt.Sprintf("kill -9 %d", pid) },
		escaped: func(_ *testing.T, _ *fixture, pid int, _ string) bool {
			deadline := time.Now().Add(time.Second)
			for !sandboxtest.Gone(pid) {
				if time.Now().After(deadline) {
					return false
				}
				time.Sleep(10 * time.Millisecond)
			}
			return true
		}},
}

// runEscapes runs every escape through run: unconfined (mode none) each
// must work, which proves the check sees it; confined each must fail.
func runEscapes(t *testing.T, f *fixture, mode sandbox.Mode, run runFunc) {
	for _, e := range escapes {
		t.Run(e.name, func(t *testing.T) {
			f.reset(t)
			if e.setup != nil {
				e.setup(t, f)
			}
			pid := outsider(t)
			out := run(t, e.command(f, pid), 20)
			got := e.escaped(t, f, pid, out)
			switch {
			case mode == sandbox.ModeNone && !got:
				t.Fatalf("control: the escape failed even without a sandbox, so the check proves nothing; output:\n%s", out)
			case mode != sandbox.ModeNone && got:
				t.Fatalf("ESCAPED from the %s sandbox; output:\n%s", mode, out)
			}
			for _, s := range []string{configSecret, sessionSecret, otherSecret, envSecret} {
				if mode != sandbox.ModeNone && strings.Contains(out, s) {
					t.Fatalf("secret in the output: %s", out)
				}
			}
		})
	}
}

// networkEscape connects to a listener of the test on loopback; with the
// network off it must not arrive (unconfined it does: the control).
func networkEscape(t *testing.T, mode sandbox.Mode, run runFunc) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	out := run(t, fmt.Sprintf("echo hello > /dev/tcp/127.0.0.1/%d && echo connected", ln.Addr().(*net.TCPAddr).Port), 20)
	wait := 200 * time.Millisecond
	if mode == sandbox.ModeNone {
		wait = 10 * time.Second
	}
	_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(wait))
	c, err := ln.Accept()
	got := err == nil
	if got {
		c.Close()
	}
	switch {
	case mode == sandbox.ModeNone && !got:
		t.Fatalf("control: no connection even without a sandbox; output:\n%s", out)
	case mode != sandbox.ModeNone && (got || strings.Contains(out, "connected")):
		t.Fatalf("ESCAPED: connected to loopback with the network off under %s; output:\n%s", mode, out)
	}
}

// modes are the control and every confining mode; confining modes the host
// lacks are skipped (Landlock never in CI).
var modes = []sandbox.Mode{sandbox.ModeNone, sandbox.ModeLandlock, sandbox.ModeBwrap}

func forModes(t *testing.T, f func(t *testing.T, mode sandbox.Mode)) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			if mode != sandbox.ModeNone {
				sandboxtest.Require(t, mode)
			}
			f(t, mode)
		})
	}
}

// marker is a sleep length no other process uses, to find the process in
// /proc whatever PID namespace it is in.
func marker() string { return fmt.Sprintf("1000.%09d", rand.IntN(1e9)) }

// requireForkBombContainable refuses to start a fork bomb the host cannot
// contain: RLIMIT_NPROC does not bind root, so root needs a pids cgroup.
func requireForkBombContainable(t *testing.T) {
	t.Helper()
	if os.Getuid() == 0 && !sandbox.Detect().PidsCgroup {
		msg := "running as root without a writable pids cgroup: RLIMIT_NPROC does not bind root, so a fork bomb cannot be contained here; not starting one"
		if sandboxtest.CI() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// forkBomb runs a fork bomb through run and checks that the process count stays under limit, that the
// test process keeps answering HTTP meanwhile, and that nothing is left.
func forkBomb(t *testing.T, run runFunc, limit int) {
	m := marker()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer srv.Close()
	stop := make(chan struct{})
	type sample struct {
		procs   int
		latency time.Duration
	}
	result := make(chan sample, 1)
	go func() {
		var most sample
		cl := &http.Client{Timeout: 30 * time.Second}
		for {
			select {
			case <-stop:
				result <- most
				return
			case <-time.After(50 * time.Millisecond): // the sampling rate
			}
			most.procs = max(most.procs, len(sandboxtest.FindProcs(m)))
			began := time.Now()
			resp, err := cl.Get(srv.URL)
			if err != nil {
				most.latency = time.Hour
				continue
			}
			resp.Body.Close()
			most.latency = max(most.latency, time.Since(began))
		}
	}()
	// It reaches the limit within a second or two; the timeout leaves room
	// for a loaded machine.
	out := run(t, "# "+m+"\nbomb() { bomb | bomb & }; bomb; sleep 60", 10)
	close(stop)
	got := <-result
	sandboxtest.WaitNoProcs(t, m, 30*time.Second)
	t.Logf("fork bomb: at most %d processes seen, slowest HTTP answer %s", got.procs, got.latency)
	// What shows the limit, not the timeout, stopped it: fork failing, or
	// the count seen at the limit (an MCP server shares the limit with its
	// commands and may itself die for want of a thread: its problem, not
	// the gateway's).
	if !strings.Contains(out, "Resource temporarily unavailable") && got.procs < limit*9/10 {
		t.Fatalf("fork never failed and only %d processes ran: the bomb was not stopped by the process limit; output:\n%.2000s", got.procs, out)
	}
	if got.procs > limit+32 {
		t.Errorf("%d processes, limit %d: not contained", got.procs, limit)
	}
	if got.latency > 5*time.Second {
		t.Errorf("the test process answered HTTP after %s during the bomb", got.latency)
	}
}
