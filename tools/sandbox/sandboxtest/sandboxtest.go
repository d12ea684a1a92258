//go:build unix

// Package sandboxtest holds test helpers for code that starts processes
// through tools/sandbox.
package sandboxtest

import (
	"errors"
	"os"
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
