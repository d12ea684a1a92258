//go:build linux

package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/tools/sandbox"
	"github.com/nanobot-go/nanobot/tools/sandbox/sandboxtest"
)

// startSleeper starts `sleep MARKER` under v and returns the host PID of
// the sleep itself (not the helper or bubblewrap on the way to it).
func startSleeper(t *testing.T, v variant, ws string) int {
	t.Helper()
	m := sandboxtest.Marker()
	ctx, cancel := context.WithCancel(context.Background())
	cmd, err := sandbox.Command(ctx, sandbox.Spec{Path: "sleep", Args: []string{m}, Mode: v.mode, Dir: ws, Writable: []string{ws}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	return sandboxtest.WaitProcs(t, "sleep", m, 10*time.Second)[0]
}

// status returns the fields of /proc/PID/status.
func status(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// TestNoCapabilities: a confined command holds no capabilities, even when
// the gateway runs as root, and no_new_privs keeps setuid programs from
// bringing any back. Read from the host, so it holds whatever the sandbox
// lets the command see of /proc.
func TestNoCapabilities(t *testing.T) {
	root := os.Geteuid() == 0
	forVariants(t, false, func(t *testing.T, v variant) {
		st := status(t, startSleeper(t, v, realTempDir(t)))
		if v.mode == sandbox.ModeNone {
			// The control: unconfined, a root gateway's command has them.
			if root && strings.Trim(st["CapEff"], "0") == "" {
				t.Fatalf("unconfined command of a root gateway has no capabilities (CapEff %s): test premise broken", st["CapEff"])
			}
			return
		}
		sets := []string{"CapPrm", "CapEff", "CapAmb", "CapInh"}
		// bubblewrap run by root without a user namespace leaves the
		// bounding set; with no_new_privs nothing can be regained from it.
		if root && v.mode == sandbox.ModeLandlock {
			sets = append(sets, "CapBnd")
		}
		for _, k := range sets {
			if strings.Trim(st[k], "0") != "" {
				t.Errorf("%s = %s, want none", k, st[k])
			}
		}
		if st["NoNewPrivs"] != "1" {
			t.Errorf("NoNewPrivs = %q, want 1", st["NoNewPrivs"])
		}
	})
}

// TestOwnPIDNamespace: with namespaces the command's /proc shows the
// sandbox's processes only: not the gateway, not the host.
func TestOwnPIDNamespace(t *testing.T) {
	forVariants(t, true, func(t *testing.T, v variant) {
		if !v.namespaced() {
			t.Skip("no PID namespace without user namespaces")
		}
		ws := realTempDir(t)
		out, err := run(t, sandbox.Spec{Mode: v.mode, Dir: ws, Writable: []string{ws}},
			fmt.Sprintf("echo $$; ls /proc | grep -c '^[0-9]'; test -e /proc/%d && echo gateway-visible; true", os.Getpid()))
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		f := strings.Fields(out)
		if len(f) < 2 {
			t.Fatalf("output %q", out)
		}
		pid, _ := strconv.Atoi(f[0])
		n, _ := strconv.Atoi(f[1])
		// A small init (bubblewrap's, or the helper) is PID 1; the
		// command comes soon after it.
		if pid < 2 || pid > 32 || n < 1 || n > 10 || strings.Contains(out, "gateway-visible") {
			t.Errorf("pid, process count = %q; want a small pid, fewer than 10 processes, the gateway invisible", out)
		}
	})
}

// TestFileAccess: what a confined command may and may not touch, in every
// mode, each denial checked against the unconfined control.
func TestFileAccess(t *testing.T) {
	root := realTempDir(t)
	ws, outside, readable := filepath.Join(root, "ws"), filepath.Join(root, "outside"), filepath.Join(root, "readable")
	for _, d := range []string{ws, outside, readable} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{filepath.Join(outside, "secret"), filepath.Join(readable, "notes")} {
		if err := os.WriteFile(p, []byte("SANDBOX-SECRET"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tmpName := "nanobot-sandbox-test-" + sandboxtest.Marker()
	t.Cleanup(func() { os.Remove(filepath.Join("/tmp", tmpName)) })
	cases := []struct {
		name, command string
		allowed       bool
		// effect reports from the host whether the command got through.
		effect func(out string) bool
	}{
		{"read outside", "cat " + filepath.Join(outside, "secret"), false, nil},
		{"write outside", "echo SANDBOX-SECRET > " + filepath.Join(outside, "new"), false, func(string) bool {
			_, err := os.Stat(filepath.Join(outside, "new"))
			return err == nil
		}},
		{"write the shared /tmp", "echo x > /tmp/" + tmpName + "; true", false, func(string) bool {
			_, err := os.Stat(filepath.Join("/tmp", tmpName))
			return err == nil
		}},
		{"read Readable", "cat " + filepath.Join(readable, "notes"), true, nil},
		{"write Readable", "echo SANDBOX-SECRET > " + filepath.Join(readable, "new"), false, func(string) bool {
			_, err := os.Stat(filepath.Join(readable, "new"))
			return err == nil
		}},
		{"write and read the workspace and TMPDIR", "echo SANDBOX-SECRET > a && cat a && t=$(mktemp) && echo ok > $t && cat $t", true, nil},
		{"run system programs", "ls /usr/bin >/dev/null && echo SANDBOX-SECRET", true, nil},
		{"read /etc", "grep -q root /etc/passwd && echo SANDBOX-SECRET", true, nil},
	}
	if _, err := os.Stat("/etc/shadow"); err == nil && os.Geteuid() == 0 {
		// Root owns the password hashes; without this the sandbox must
		// still keep them out.
		cases = append(cases, struct {
			name, command string
			allowed       bool
			effect        func(out string) bool
		}{"read /etc/shadow as root", "cat /etc/shadow && echo SANDBOX-SECRET", false, nil})
	}
	forVariants(t, false, func(t *testing.T, v variant) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				for _, p := range []string{filepath.Join(outside, "new"), filepath.Join(readable, "new"), filepath.Join("/tmp", tmpName)} {
					os.Remove(p)
				}
				out, err := run(t, sandbox.Spec{Mode: v.mode, Dir: ws, Writable: []string{ws}, Readable: []string{readable}}, c.command)
				got := err == nil && strings.Contains(out, "SANDBOX-SECRET")
				if c.effect != nil {
					got = c.effect(out)
				}
				want := c.allowed || v.mode == sandbox.ModeNone
				if got != want {
					t.Errorf("got through = %v, want %v (err %v): %s", got, want, err, out)
				}
			})
		}
	})
}

// TestNoNetwork: with the network off a confined command cannot reach a
// server on the host's loopback; with it on, it can. The server is another
// process's: the test process's own ports are walled off (TestPortWall).
func TestNoNetwork(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("needs bash for /dev/tcp")
	}
	port := sandboxtest.ForeignServer(t, "SANDBOX-SECRET\n")
	command := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && head -1 <&3", port)
	forVariants(t, true, func(t *testing.T, v variant) {
		if v.noNS && sandbox.LandlockABI() < 4 {
			t.Skipf("network off needs Landlock ABI 4 or namespaces; ABI %d", sandbox.LandlockABI())
		}
		ws := realTempDir(t)
		for _, deny := range []bool{false, true} {
			var out strings.Builder
			cmd, err := sandbox.Command(context.Background(), sandbox.Spec{Path: bash, Args: []string{"-c", command}, Mode: v.mode, Dir: ws, Writable: []string{ws}, DenyNetwork: deny, Stdout: &out, Stderr: &out})
			if err != nil {
				t.Fatal(err)
			}
			err = cmd.Run()
			if got := err == nil && strings.Contains(out.String(), "SANDBOX-SECRET"); got == deny {
				t.Errorf("DenyNetwork=%v: connected = %v (%v): %s", deny, got, err, out.String())
			}
		}
	})
}

// TestPidsCgroupPerChild: where a pids cgroup can be made, each confined
// child gets its own, so one child's fork bomb cannot starve the others.
func TestPidsCgroupPerChild(t *testing.T) {
	if !sandbox.PidsCgroupAvailable() {
		t.Skip("no writable pids cgroup here (normal for a gateway not running as root)")
	}
	forVariants(t, true, func(t *testing.T, v variant) {
		ws := realTempDir(t)
		seen := map[string]bool{}
		for range 2 {
			pid := startSleeper(t, v, ws)
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
			if err != nil {
				t.Fatal(err)
			}
			line := ""
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(l, ":pids:") {
					line = l
				}
			}
			if !strings.Contains(line, "/nanobot-sandbox/") || seen[line] {
				t.Fatalf("sleep %d is in pids cgroup %q; want one of its own under nanobot-sandbox (seen %v)", pid, line, seen)
			}
			seen[line] = true
		}
	})
}

// BenchmarkSandboxStart is what confinement adds to every command: start
// and wait for `true` in each mode. The helper is this test binary, or the
// executable NANOBOT_BENCH_HELPER names (a built nanobot, whose start cost
// is what the gateway pays).
func BenchmarkSandboxStart(b *testing.B) {
	if exe := os.Getenv("NANOBOT_BENCH_HELPER"); exe != "" {
		defer sandbox.SetHelper(exe)()
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			sandboxtest.Require(b, v.mode)
			if v.noNS {
				sandbox.NoNamespaces.Store(true)
				defer sandbox.NoNamespaces.Store(false)
			}
			ws := b.TempDir()
			for b.Loop() {
				cmd, err := sandbox.Command(context.Background(), sandbox.Spec{Path: "true", Mode: v.mode, Dir: ws, Writable: []string{ws}})
				if err != nil {
					b.Fatal(err)
				}
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
	}
}

// TestHelperRefusesNamespacesItLacks: a policy that says "namespaces" run
// outside a new PID namespace (by hand) is refused before the helper
// mounts anything. Run in a mount namespace of its own, so a regression
// cannot touch the host's /proc.
func TestHelperRefusesNamespacesItLacks(t *testing.T) {
	if !sandbox.Namespaces() {
		t.Skip("needs user namespaces to run the helper in a throwaway mount namespace")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd := &exec.Cmd{Path: self, Args: []string{sandbox.HelperName, `{"ns":true,"net":true}`, "--", "/bin/true"}, Stdout: &out, Stderr: &out}
	uid, gid := os.Getuid(), os.Getgid()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
	}
	err = cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 126 || !strings.Contains(out.String(), "not started in a new PID namespace") {
		t.Errorf("exit %d (%v): %s; want 126 and a refusal", code, err, out.String())
	}
}
