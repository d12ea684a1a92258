package mcp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/sandbox"
	"github.com/nanobot-go/nanobot/tools/sandbox/sandboxtest"
)

// The exec battery's escapes, run by a stdio MCP server that executes
// shell commands (testdata/runserver) started through the sandbox as the
// gateway starts any stdio server: first unconfined, where each must get
// through (the control), then under each mode the machine provides.

var runServerDir string

// runServer builds testdata/runserver once (without -race: the race
// runtime does not start under the sandbox's address-space limit).
var runServer = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "nanobot-runserver-")
	if err != nil {
		return "", err
	}
	runServerDir = dir
	bin := filepath.Join(dir, "runserver")
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	if out, err := exec.Command(goBin, "build", "-o", bin, "./testdata/runserver").CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the run server: %v\n%s", err, out)
	}
	return bin, nil
})

// RemoveRunServer deletes the built run server (from TestMain).
func RemoveRunServer() {
	if runServerDir != "" {
		os.RemoveAll(runServerDir)
	}
}

// runVia starts the run server under mode with the workspace ws and
// returns a function that runs a command line through its tool, and the
// Manager. edit changes the server's config.
func runVia(t *testing.T, mode sandbox.Mode, ws string, denyNetwork bool, edit ...func(*configs.MCPServerConfig)) (func(command string) string, *Manager) {
	t.Helper()
	bin, err := runServer()
	if err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	server := configs.MCPServerConfig{Type: "stdio", Command: bin, ToolTimeout: 60, EnabledTools: []string{"*"}}
	for _, e := range edit {
		e(&server)
	}
	cfg := map[string]configs.MCPServerConfig{"b": server}
	m := New(cfg, reg, Options{
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Dir: ws, Writable: []string{ws},
		Sandbox: mode, DenyNetwork: denyNetwork, BackoffMin: 50 * time.Millisecond, BackoffMax: 500 * time.Millisecond,
	})
	m.Start(context.Background(), 30*time.Second)
	t.Cleanup(m.Close)
	if st := m.Status(); len(st) != 1 || st[0].State != StateConnected {
		t.Fatalf("sandbox %q: the run server did not connect: %+v", mode, st)
	}
	return func(command string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		res, err := reg.Execute(ctx, "mcp_b_run", map[string]any{"command": command})
		if err != nil {
			return res.Content + "\nerror: " + err.Error()
		}
		return res.Content
	}, m
}

func TestBatteryMCPRunServer(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	config := filepath.Join(home, ".nanobot", "config.json")
	sessions := filepath.Join(home, ".nanobot", "sessions")
	ws := filepath.Join(home, ".nanobot", "workspace")
	outside := filepath.Join(root, "elsewhere")
	for _, d := range []string{sessions, ws, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(sessions, "telegram_1.jsonl"), []byte(`{"content":"BATTERY-SECRET"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	sharedTmp := filepath.Join("/tmp", "nanobot-mcp-battery-"+sandboxtest.Marker())
	t.Cleanup(func() { os.Remove(sharedTmp) })
	// Another process of the user's, with a key in its environment.
	other := exec.Command("sleep", sandboxtest.Marker())
	other.Env = []string{"OPENAI_API_KEY=sk-BATTERY-SECRET"}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
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
	// A daemon's UNIX sockets: a pathname one outside the workspace and an
	// abstract one.
	daemonSock := filepath.Join(outside, "daemon.sock")
	abstractSock := "@nanobot-mcp-battery-" + sandboxtest.Marker()
	for _, addr := range []string{daemonSock, abstractSock} {
		uln, err := net.Listen("unix", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer uln.Close()
		go func() {
			for {
				c, err := uln.Accept()
				if err != nil {
					return
				}
				c.Write([]byte("BATTERY-SECRET\n"))
				c.Close()
			}
		}()
	}
	// Outside the workspace, and not under any folder the server may use.
	reset := func() {
		if err := os.WriteFile(config, []byte(`{"apiKey":"sk-BATTERY-SECRET"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(outside, "new.txt"))
		os.Remove(sharedTmp)
	}
	exists := func(p string) func(string) bool {
		return func(string) bool { _, err := os.Stat(p); return err == nil }
	}
	printed := func(out string) bool { return strings.Contains(out, "BATTERY-SECRET") }
	type escape struct {
		name, command string
		escaped       func(out string) bool
	}
	cases := []escape{
		{"read the config", "cat " + config, printed},
		{"read the sessions", "cat " + sessions + "/*.jsonl", printed},
		{"replace the config", "echo '{}' > " + config, func(string) bool {
			b, _ := os.ReadFile(config)
			return !strings.Contains(string(b), "BATTERY-SECRET")
		}},
		{"write outside the workspace", "echo x > " + filepath.Join(outside, "new.txt"), exists(filepath.Join(outside, "new.txt"))},
		{"write into the shared /tmp", "echo x > " + sharedTmp, exists(sharedTmp)},
		{"read another process's environment", fmt.Sprintf("tr '\\0' '\\n' < /proc/%d/environ", other.Process.Pid), printed},
	}
	connect := ""
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		connect = `/usr/bin/python3 -c 'import socket, sys; a = sys.argv[1].replace("@", "\0", 1); s = socket.socket(socket.AF_UNIX); s.connect(a); print(s.recv(64).decode())' `
		cases = append(cases,
			escape{"connect to a UNIX socket outside the workspace", connect + daemonSock, printed},
			escape{"connect to an abstract UNIX socket", connect + abstractSock, printed})
	} else {
		t.Log("no /usr/bin/python3: the UNIX socket cases are left out")
	}
	check := func(t *testing.T, mode sandbox.Mode) {
		run, _ := runVia(t, mode, ws, false)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				reset()
				out := run(c.command)
				if got, want := c.escaped(out), mode == sandbox.ModeNone; got != want {
					t.Errorf("sandbox %s: got through = %v, want %v: %s", mode, got, want, out)
				}
			})
		}
		// The work a server is for still happens in the workspace.
		if out := run("echo BATTERY-OK > made.txt && cat made.txt"); !strings.Contains(out, "BATTERY-OK") {
			t.Errorf("sandbox %s: cannot work in the workspace: %s", mode, out)
		}
		t.Run("allowUnixSockets on the server", func(t *testing.T) {
			if mode != sandbox.ModeLandlock || connect == "" {
				t.Skip("landlock with python3 only (under bwrap the socket's folder is not in the namespace)")
			}
			yes := true
			run, _ := runVia(t, mode, ws, false, func(c *configs.MCPServerConfig) { c.AllowUnixSockets = &yes })
			if out := run(connect + daemonSock); !printed(out) {
				t.Errorf("with the server's allowUnixSockets the socket stays closed: %s", out)
			}
		})
		t.Run("network off", func(t *testing.T) {
			if mode == sandbox.ModeLandlock && !sandbox.Namespaces() && sandbox.LandlockABI() < 4 {
				t.Skip("network off needs Landlock ABI 4 or user namespaces")
			}
			if _, err := exec.LookPath("bash"); err != nil {
				t.Skip("needs bash for /dev/tcp")
			}
			run, _ := runVia(t, mode, ws, true)
			out := run(fmt.Sprintf("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && head -1 <&3'", ln.Addr().(*net.TCPAddr).Port))
			if got, want := printed(out), mode == sandbox.ModeNone; got != want {
				t.Errorf("sandbox %s with the network off: connected = %v, want %v: %s", mode, got, want, out)
			}
		})
	}
	t.Run("none", func(t *testing.T) { check(t, sandbox.ModeNone) })
	for _, mode := range sandboxtest.ConfiningModes {
		t.Run(string(mode), func(t *testing.T) {
			sandboxtest.Require(t, mode)
			check(t, mode)
		})
	}
}

// TestBatteryMCPServerStopKillsEverything: what a server's command leaves
// running — in a session of its own, ignoring SIGTERM — ends with the
// server under a sandbox with its own PID namespace. Unconfined it
// survives the server's stop: the control.
func TestBatteryMCPServerStopKillsEverything(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, mode sandbox.Mode) {
		run, m := runVia(t, mode, ws, false)
		mk := sandboxtest.Marker()
		if out := run("trap '' TERM; setsid sleep " + mk + " > /dev/null 2>&1 < /dev/null & echo started"); !strings.Contains(out, "started") {
			t.Fatalf("run: %s", out)
		}
		sandboxtest.WaitProcs(t, "sleep", mk, 10*time.Second)
		m.Close()
		if mode == sandbox.ModeNone {
			left := sandboxtest.FindProcs(mk)
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			if len(left) == 0 {
				t.Fatal("control: the leftover did not survive an unconfined server's stop; the check proves nothing")
			}
			return
		}
		sandboxtest.WaitNoProcs(t, mk, 15*time.Second)
	}
	t.Run("none", func(t *testing.T) { check(t, sandbox.ModeNone) })
	for _, mode := range sandboxtest.ConfiningModes {
		t.Run(string(mode), func(t *testing.T) {
			sandboxtest.Require(t, mode)
			if mode == sandbox.ModeLandlock && !sandbox.Namespaces() {
				t.Skip("no user namespaces here: a landlock child can leave the server's process group (see docs/sandbox.md)")
			}
			check(t, mode)
		})
	}
}
