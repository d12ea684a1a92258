//go:build unix

package sandboxtest

import (
	"bytes"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/tools/sandbox"
)

// CI reports whether the tests run in CI (CI set, or NANOBOT_CI=1), where a
// missing Landlock fails the test instead of skipping it.
func CI() bool { return os.Getenv("CI") != "" || os.Getenv("NANOBOT_CI") == "1" }

// ConfiningModes are the modes a security test runs under.
var ConfiningModes = []sandbox.Mode{sandbox.ModeLandlock, sandbox.ModeBwrap}

// Require skips the test when the host cannot provide mode, saying why:
// Landlock only when the kernel truly lacks it (and never in CI, where that
// fails the test), bwrap when bubblewrap is not installed or cannot create
// namespaces here.
func Require(t testing.TB, mode sandbox.Mode) {
	t.Helper()
	if _, err := sandbox.ResolveMode(mode); err == nil {
		return
	}
	s := sandbox.Detect()
	switch mode {
	case sandbox.ModeLandlock:
		msg := "Landlock unavailable: " + s.LandlockNote + " (" + s.String() + ")"
		if s.LandlockABI > 0 {
			msg = "no sandbox helper executable: " + s.HelperNote
		}
		if CI() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	case sandbox.ModeBwrap:
		t.Skip("bubblewrap unavailable: " + s.BwrapNote + " (apt install bubblewrap)")
	default:
		t.Fatalf("mode %q not available", mode)
	}
}

// FindProcs returns the live processes whose command line contains marker
// (zombies excluded). It sees processes in any PID namespace below ours.
func FindProcs(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			continue
		}
		if !Gone(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// WaitNoProcs polls until no process with marker in its command line is
// left, failing the test after timeout.
func WaitNoProcs(t testing.TB, marker string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		left := FindProcs(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v (%q) still running after %s", left, marker, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WaitProcs polls until at least one process with marker in its command
// line runs, failing the test after timeout.
func WaitProcs(t testing.TB, marker string, timeout time.Duration) []int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if p := FindProcs(marker); len(p) > 0 {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("no process %q started within %s", marker, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
