//go:build unix

// Package sandboxtest holds test helpers for code that starts processes
// through tools/sandbox.
//
// Concurrency: the helpers keep no state; those that take a testing.TB
// fail through it and belong to the goroutine running the test, the others
// may be called from any goroutine. TimeoutAfterStart calls run on a
// goroutine of its own, so run reports failure by its error, not through t.
// Serve answers each connection on a goroutine of its own, which ends when
// the client closes or after ten seconds.
package sandboxtest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Gone reports whether pid no longer runs. A zombie (killed, not yet
// reaped by its new parent) counts as gone.
func Gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// The state follows the parenthesised command name: "pid (comm) S ...".
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

// WaitGone polls until pid is gone, failing the test after timeout.
func WaitGone(t testing.TB, pid int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !Gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running after %s", pid, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// WaitFile polls until path exists with non-empty content and returns it.
func WaitFile(t testing.TB, path string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			return strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not written within %s", path, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Marker returns a sleep duration no other process uses ("1000.<random>"):
// run `sleep MARKER` and find it with FindProcs, whatever PID namespace it
// runs in (a PID a sandboxed shell prints is its namespace's, not ours).
func Marker() string { return fmt.Sprintf("1000.%09d", rand.IntN(1e9)) }

// FindProcs returns the live processes whose command line contains marker
// (zombies excluded), in our PID namespace or any below it.
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

// WaitProcs polls until a process whose command line is exactly argv0
// (base name) and contains marker runs, and returns its PIDs; it fails the
// test after timeout.
func WaitProcs(t testing.TB, argv0, marker string, timeout time.Duration) []int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if found := procsNamed(argv0, marker); len(found) > 0 {
			return found
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s %s started within %s", argv0, marker, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// procsNamed lists the processes whose argv[0] has base name argv0 and
// whose command line contains marker.
func procsNamed(argv0, marker string) []int {
	var found []int
	for _, pid := range FindProcs(marker) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if first, _, _ := bytes.Cut(b, []byte{0}); filepath.Base(string(first)) == argv0 {
			found = append(found, pid)
		}
	}
	return found
}

// TimeoutAfterStart is for tests of what a command's timeout kills. It
// calls run(timeoutS, marker) with timeouts of 1, 2, 4 and 8 seconds until
// a process argv0 carrying the marker is seen running before run returns,
// and returns the timeout and the marker of that attempt and run's error. On
// a loaded machine a command can time out before it starts what the test
// looks for, which proves nothing; then it is tried with more time.
func TimeoutAfterStart(t testing.TB, argv0 string, run func(timeoutS int, marker string) error) (timeoutS int, marker string, err error) {
	t.Helper()
	for _, ts := range []int{1, 2, 4, 8} {
		m := Marker()
		done := make(chan error, 1)
		go func() { done <- run(ts, m) }()
		deadline := time.Now().Add(time.Duration(ts)*time.Second + 20*time.Second)
		for {
			if len(procsNamed(argv0, m)) > 0 {
				return ts, m, <-done
			}
			select {
			case <-done:
				WaitNoProcs(t, m, 10*time.Second)
			case <-time.After(10 * time.Millisecond):
				if time.Now().After(deadline) {
					t.Fatalf("%s %s neither started nor timed out within %s", argv0, m, time.Duration(ts)*time.Second+20*time.Second)
				}
				continue
			}
			t.Logf("the command timed out after %d s before %s started; trying with more time", ts, argv0)
			break
		}
	}
	t.Fatalf("%s never started before its command timed out, even with 8 s", argv0)
	return 0, "", nil
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
			t.Fatalf("processes %v (%s) still running after %s", left, marker, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
