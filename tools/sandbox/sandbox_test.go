package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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

// allModes is none plus every confining mode.
var allModes = append([]sandbox.Mode{sandbox.ModeNone}, sandboxtest.ConfiningModes...)

// marker is a sleep duration no other process uses, to find the sleeper
// in /proc whatever PID namespace it runs in.
func marker() string { return fmt.Sprintf("1000.%09d", rand.IntN(1e9)) }

func TestCancelKillsWholeGroup(t *testing.T) {
	for _, mode := range allModes {
		t.Run(string(mode), func(t *testing.T) {
			sandboxtest.Require(t, mode)
			dir := t.TempDir()
			m := marker()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cmd, err := sandbox.Command(ctx, sandbox.Spec{
				Path: "sh", Args: []string{"-c", "sleep " + m + " & wait"},
				Dir: dir, Writable: []string{dir}, Mode: mode,
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sandboxtest.WaitProcs(t, m, 10*time.Second)
			cancel()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Wait did not return after cancel")
			}
			sandboxtest.WaitNoProcs(t, m, 10*time.Second)
		})
	}
}

func TestKillGroupAfterLeaderExit(t *testing.T) {
	for _, mode := range allModes {
		t.Run(string(mode), func(t *testing.T) {
			sandboxtest.Require(t, mode)
			dir := t.TempDir()
			m := marker()
			cmd, err := sandbox.Command(context.Background(), sandbox.Spec{
				Path: "sh", Args: []string{"-c", "sleep " + m + " > /dev/null 2>&1 &"},
				Dir: dir, Writable: []string{dir}, Mode: mode, WaitDelay: 100 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Run(); err != nil {
				t.Fatal(err)
			}
			if mode == sandbox.ModeBwrap || (mode == sandbox.ModeLandlock && sandbox.Detect().UserNS) {
				// The shell was PID 1 of the sandbox's PID namespace: its
				// exit takes every process in it along.
				sandboxtest.WaitNoProcs(t, m, 10*time.Second)
				return
			}
			// Still there (polled: a process in the middle of exec shows
			// an empty command line for a moment).
			sandboxtest.WaitProcs(t, m, 10*time.Second)
			if err := sandbox.KillGroup(cmd); err != nil {
				t.Fatalf("KillGroup: %v", err)
			}
			sandboxtest.WaitNoProcs(t, m, 10*time.Second)
			if err := sandbox.KillGroup(cmd); err != nil {
				t.Errorf("second KillGroup = %v, want nil", err)
			}
		})
	}
}

func TestEnvNotInherited(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-secret")
	t.Setenv("NANOBOT_EXTRA", "passed")
	tests := []struct {
		name    string
		env     []string
		want    []string
		wantNot []string
	}{
		{"nil env is the base set", nil, []string{"PATH="}, []string{"OPENAI_API_KEY", "NANOBOT_EXTRA"}},
		{"explicit env", sandbox.BaseEnv("/work/home", "NANOBOT_EXTRA"), []string{"HOME=/work/home", "NANOBOT_EXTRA=passed"}, []string{"OPENAI_API_KEY"}},
		{"extra with value", sandbox.BaseEnv("", "FOO=bar", "UNSET_KEY_XYZ"), []string{"FOO=bar"}, []string{"OPENAI_API_KEY", "UNSET_KEY_XYZ"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			cmd, err := sandbox.Command(context.Background(), sandbox.Spec{Path: "env", Env: tt.env, Stdout: &out, Mode: sandbox.ModeNone})
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Run(); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("env lacks %q:\n%s", w, out.String())
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(out.String(), w) {
					t.Errorf("env leaks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

// TestConfinedEnv: a confined child gets a private TMPDIR and, with the
// real home off limits, the workspace as HOME; no key, no helper marker.
func TestConfinedEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-secret")
	for _, mode := range sandboxtest.ConfiningModes {
		t.Run(string(mode), func(t *testing.T) {
			sandboxtest.Require(t, mode)
			ws := t.TempDir()
			var out bytes.Buffer
			cmd, err := sandbox.Command(context.Background(), sandbox.Spec{
				Path: "env", Env: sandbox.BaseEnv(t.TempDir(), "TMPDIR=/tmp"), Stdout: &out, Stderr: &out,
				Mode: mode, Writable: []string{ws}, Dir: ws,
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v: %s", err, out.String())
			}
			for _, w := range []string{"TMPDIR=" + filepath.Join(ws, ".tmp") + "\n", "HOME=" + ws + "\n"} {
				if !strings.Contains(out.String(), w) {
					t.Errorf("env lacks %q:\n%s", w, out.String())
				}
			}
			for _, w := range []string{"OPENAI_API_KEY", "NANOBOT_SANDBOX"} {
				if strings.Contains(out.String(), w) {
					t.Errorf("env leaks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

// run runs sh -c script confined and returns its combined output and error.
func run(t *testing.T, spec sandbox.Spec, script string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	spec.Path, spec.Args = "sh", []string{"-c", script}
	spec.Stdout, spec.Stderr = &out, &out
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd, err := sandbox.Command(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Run()
	return out.String(), err
}

// TestConfinedPolicy checks the default policy: what a confined child may
// and may not touch. Each denied case is first run unconfined, which must
// succeed, so a broken check cannot pass.
func TestConfinedPolicy(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "workspace")
	ro := filepath.Join(root, "shared")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{ws, ro, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.WriteFile(filepath.Join(ro, "notes"), []byte("shared-notes"), 0o644))
	must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("top-secret"), 0o600))

	tests := []struct {
		name   string
		script string
		allow  bool
		effect string // a file that must not exist afterwards when denied
		// private: under bwrap the write lands in the sandbox's own /tmp
		// and succeeds there; only the effect on the host is checked.
		private bool
	}{
		{"run system programs", "ls /usr/bin >/dev/null && cat /etc/passwd | head -1", true, "", false},
		{"write the workspace", "echo hi > " + ws + "/a && mkdir -p " + ws + "/d/e && mv " + ws + "/a " + ws + "/d/e/b && cat " + ws + "/d/e/b", true, "", false},
		{"write TMPDIR", "echo hi > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"", true, "", false},
		{"read an allowed folder", "cat " + ro + "/notes", true, "", false},
		{"write an allowed read-only folder", "echo x > " + ro + "/new", false, filepath.Join(ro, "new"), false},
		{"read outside", "cat " + outside + "/secret", false, "", false},
		{"list outside", "ls " + outside, false, "", false},
		{"write outside", "echo x > " + outside + "/escaped", false, filepath.Join(outside, "escaped"), false},
		{"write the shared /tmp", "echo x > " + root + "/escaped", false, filepath.Join(root, "escaped"), true},
		{"read /etc/shadow", "cat /etc/shadow", false, "", false},
	}
	for _, mode := range sandboxtest.ConfiningModes {
		t.Run(string(mode), func(t *testing.T) {
			sandboxtest.Require(t, mode)
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					spec := sandbox.Spec{Dir: ws, Writable: []string{ws}, Readable: []string{ro}}
					if !tt.allow {
						spec.Mode = sandbox.ModeNone
						if out, err := run(t, spec, tt.script); err != nil && tt.name != "read /etc/shadow" {
							t.Fatalf("control run without sandbox failed (%v): %s", err, out)
						}
						if tt.effect != "" {
							must(t, os.RemoveAll(tt.effect))
						}
					}
					spec.Mode = mode
					out, err := run(t, spec, tt.script)
					if tt.allow && err != nil {
						t.Fatalf("want allowed, got %v: %s", err, out)
					}
					if !tt.allow {
						if err == nil && !(tt.private && mode == sandbox.ModeBwrap) {
							t.Fatalf("want denied, succeeded: %s", out)
						}
						if strings.Contains(out, "top-secret") {
							t.Fatalf("secret leaked: %s", out)
						}
						if tt.effect != "" {
							if _, err := os.Stat(tt.effect); err == nil {
								t.Fatalf("%s was written", tt.effect)
							}
						}
					}
				})
			}
		})
	}
}

func TestLimits(t *testing.T) {
	for _, mode := range sandboxtest.ConfiningModes {
		t.Run(string(mode), func(t *testing.T) {
			sandboxtest.Require(t, mode)
			ws := t.TempDir()
			spec := sandbox.Spec{Mode: mode, Dir: ws, Writable: []string{ws}, Limits: sandbox.Limits{CPUSeconds: 7, MemoryMB: 1000, Processes: 64, FileSizeMB: 3}}
			out, err := run(t, spec, "ulimit -t; ulimit -v; ulimit -f")
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			// ulimit -f counts 512-byte blocks in POSIX sh, 1024 in bash.
			if f := strings.Fields(out); len(f) != 3 || f[0] != "7" || f[1] != "1024000" || (f[2] != "6144" && f[2] != "3072") {
				t.Errorf("ulimit -t, -v, -f = %q, want 7, 1024000, 3 MiB", out)
			}
			out, err = run(t, spec, "head -c 4194304 /dev/zero > big")
			if err == nil {
				t.Errorf("writing 4 MiB under a 3 MiB limit succeeded: %s", out)
			}
			if fi, err := os.Stat(filepath.Join(ws, "big")); err == nil && fi.Size() > 3<<20 {
				t.Errorf("file grew to %d bytes", fi.Size())
			}
			spec.Limits = sandbox.Limits{CPUSeconds: -1, MemoryMB: -1, Processes: -1, FileSizeMB: -1}
			if out, err := run(t, spec, "ulimit -t; ulimit -v"); err != nil || strings.Count(out, "unlimited") != 2 {
				t.Errorf("negative limits: %q, %v; want unlimited", out, err)
			}
		})
	}
}

// TestHelperRefuses: a program outside what the sandbox may read does not
// run: the helper (landlock) says so and exits 126, bubblewrap finds no
// such file. It is never run unconfined instead.
func TestHelperRefuses(t *testing.T) {
	for _, mode := range sandboxtest.ConfiningModes {
		t.Run(string(mode), func(t *testing.T) {
			sandboxtest.Require(t, mode)
			hidden := t.TempDir()
			prog := filepath.Join(hidden, "prog")
			must(t, os.WriteFile(prog, []byte("#!/bin/sh\necho ran\n"), 0o755))
			ws := t.TempDir()
			var out bytes.Buffer
			cmd, err := sandbox.Command(context.Background(), sandbox.Spec{Path: prog, Mode: mode, Dir: ws, Writable: []string{ws}, Stdout: &out, Stderr: &out})
			if err != nil {
				t.Fatal(err)
			}
			err = cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || strings.Contains(out.String(), "ran") {
				t.Fatalf("run = %v, output %q; want an error exit without running", err, out.String())
			}
			if mode == sandbox.ModeLandlock && (ee.ExitCode() != 126 || !strings.Contains(out.String(), "sandbox-exec")) {
				t.Errorf("exit %d, output %q; want 126 and the helper's message", ee.ExitCode(), out.String())
			}
		})
	}
}

func TestModes(t *testing.T) {
	for _, m := range []sandbox.Mode{"", sandbox.ModeAuto} {
		if got, err := sandbox.ResolveMode(m); err != nil || got != sandbox.Detect().Best() {
			t.Errorf("ResolveMode(%q) = %q, %v; want %q", m, got, err, sandbox.Detect().Best())
		}
	}
	if got, err := sandbox.ResolveMode(sandbox.ModeNone); err != nil || got != sandbox.ModeNone {
		t.Errorf("ResolveMode(none) = %q, %v", got, err)
	}
	if _, err := sandbox.Command(context.Background(), sandbox.Spec{Path: "true", Mode: "docker"}); !errors.Is(err, sandbox.ErrUnsupportedMode) {
		t.Errorf("Command(mode docker) error = %v, want ErrUnsupportedMode", err)
	}
	for _, m := range allModes {
		if _, err := sandbox.ResolveMode(m); err != nil {
			continue
		}
		if _, err := sandbox.Command(context.Background(), sandbox.Spec{Mode: m}); err == nil {
			t.Errorf("Command(%s) with empty path: want error", m)
		}
		if _, err := sandbox.Command(context.Background(), sandbox.Spec{Path: "no-such-program-xyz", Mode: m}); err == nil {
			t.Errorf("Command(%s) with unknown program: want error", m)
		}
	}
}

func TestSetEnv(t *testing.T) {
	got := sandbox.SetEnv([]string{"A=1", "HOME=/x", "B=2"}, "HOME", "/y")
	want := []string{"A=1", "B=2", "HOME=/y"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("SetEnv() = %v, want %v", got, want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestNoNetwork: with NoNetwork a confined child cannot reach a listener
// on loopback; without it, it can (the control).
func TestNoNetwork(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash (for /dev/tcp) not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	accepted := func(wait time.Duration) bool {
		_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(wait))
		c, err := ln.Accept()
		if err != nil {
			return false
		}
		c.Close()
		return true
	}
	for _, mode := range sandboxtest.ConfiningModes {
		t.Run(string(mode), func(t *testing.T) {
			sandboxtest.Require(t, mode)
			ws := t.TempDir()
			for _, noNet := range []bool{false, true} {
				var out bytes.Buffer
				cmd, err := sandbox.Command(context.Background(), sandbox.Spec{
					Path: bash, Args: []string{"-c", fmt.Sprintf("echo hello > /dev/tcp/127.0.0.1/%d", port)},
					Mode: mode, Dir: ws, Writable: []string{ws}, NoNetwork: noNet, Stdout: &out, Stderr: &out,
				})
				if err != nil {
					t.Fatal(err)
				}
				err = cmd.Run()
				switch {
				case !noNet && (err != nil || !accepted(10*time.Second)):
					t.Fatalf("network on: connect failed (%v): %s", err, out.String())
				case noNet && err == nil:
					t.Fatalf("network off: connect succeeded: %s", out.String())
				case noNet && accepted(200*time.Millisecond):
					t.Fatal("network off: the listener got a connection")
				}
			}
		})
	}
}

// TestOwnPIDNamespace: where namespaces work, the child runs in a PID
// namespace of its own and /proc shows the sandbox's processes only, so it
// cannot even see the gateway.
func TestOwnPIDNamespace(t *testing.T) {
	for _, mode := range sandboxtest.ConfiningModes {
		t.Run(string(mode), func(t *testing.T) {
			sandboxtest.Require(t, mode)
			if mode == sandbox.ModeLandlock && !sandbox.Detect().UserNS {
				t.Skip("no user namespaces here: landlock runs in the gateway's PID namespace")
			}
			ws := t.TempDir()
			out, err := run(t, sandbox.Spec{Mode: mode, Dir: ws, Writable: []string{ws}}, fmt.Sprintf("echo $$; ls -d /proc/[0-9]* | wc -l; test -e /proc/%d && echo gateway-visible; true", os.Getpid()))
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			f := strings.Fields(out)
			// A small init (bubblewrap's, or the helper) is PID 1; the
			// command comes right after it and its threads.
			pid, _ := strconv.Atoi(f[0])
			if len(f) < 2 || pid < 2 || pid > 32 || len(f[1]) > 1 || strings.Contains(out, "gateway-visible") {
				t.Errorf("pid, process count = %q; want a small pid, fewer than 10 processes, gateway invisible", out)
			}
		})
	}
}

// BenchmarkStart measures starting and waiting for `true` in each mode:
// the cost the helper adds per command.
func BenchmarkStart(b *testing.B) {
	for _, mode := range allModes {
		b.Run(string(mode), func(b *testing.B) {
			sandboxtest.Require(b, mode)
			ws := b.TempDir()
			for b.Loop() {
				cmd, err := sandbox.Command(context.Background(), sandbox.Spec{Path: "true", Mode: mode, Dir: ws, Writable: []string{ws}})
				if err != nil {
					b.Fatal(err)
				}
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestNoCapabilities: a confined command holds no capabilities, even when
// the gateway runs as root.
func TestNoCapabilities(t *testing.T) {
	for _, mode := range sandboxtest.ConfiningModes {
		t.Run(string(mode), func(t *testing.T) {
			sandboxtest.Require(t, mode)
			ws := t.TempDir()
			out, err := run(t, sandbox.Spec{Mode: mode, Dir: ws, Writable: []string{ws}}, "grep -E '^Cap(Prm|Eff|Amb)' /proc/self/status; grep NoNewPrivs /proc/self/status")
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			// Permitted, effective and ambient are empty, and no_new_privs
			// keeps setuid programs from bringing any back.
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				f := strings.Fields(line)
				switch {
				case len(f) != 2:
					t.Errorf("unexpected line %q", line)
				case f[0] == "NoNewPrivs:" && f[1] != "1":
					t.Errorf("no_new_privs not set: %q", line)
				case f[0] != "NoNewPrivs:" && strings.Trim(f[1], "0") != "":
					t.Errorf("capability set not empty: %q", line)
				}
			}
		})
	}
}

// TestPidsCgroupPerChild: where a pids cgroup can be made, each confined
// child gets its own (a shared one would let one child's fork bomb starve
// the others). Read from the host's side: inside, a cgroup namespace may
// hide the path.
func TestPidsCgroupPerChild(t *testing.T) {
	if !sandbox.Detect().PidsCgroup {
		t.Skip("no writable pids cgroup here (normal for an unprivileged gateway)")
	}
	for _, mode := range sandboxtest.ConfiningModes {
		t.Run(string(mode), func(t *testing.T) {
			sandboxtest.Require(t, mode)
			ws := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			var cmds []*exec.Cmd
			defer func() {
				cancel()
				for _, c := range cmds {
					_ = c.Wait()
				}
			}()
			seen := map[string]bool{}
			for range 2 {
				m := marker()
				cmd, err := sandbox.Command(ctx, sandbox.Spec{Path: "sleep", Args: []string{m}, Mode: mode, Dir: ws, Writable: []string{ws}})
				if err != nil {
					t.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				cmds = append(cmds, cmd)
				line := sleeperCgroup(t, m)
				if seen[line] {
					t.Fatalf("two children share the cgroup %q", line)
				}
				seen[line] = true
			}
		})
	}
}

// sleeperCgroup waits for the sleep with marker m to run (not the helper
// or bwrap on the way to it) and returns its nanobot-sandbox cgroup line.
func sleeperCgroup(t *testing.T, m string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, pid := range sandboxtest.FindProcs(m) {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if argv0, _, _ := strings.Cut(string(cmdline), "\x00"); filepath.Base(argv0) != "sleep" {
				continue
			}
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(l, "nanobot-sandbox-") {
					return l
				}
			}
			t.Fatalf("sleep %d is in no nanobot-sandbox cgroup:\n%s", pid, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("sleep %s did not start", m)
	return ""
}
