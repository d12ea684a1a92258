// Package testproc runs real server software (ngircd, prosody, ...) for
// tests: free loopback ports, waiting until the server listens, and
// stopping it. Its functions are safe for concurrent use.
package testproc

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// FreePorts returns n distinct loopback ports that were free a moment ago.
func FreePorts(n int) ([]int, error) {
	out := make([]int, 0, n)
	lns := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range lns {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// WaitListening polls until every addr accepts a TCP connection. It fails
// when exited is closed first (the server died while starting) or after
// timeout.
func WaitListening(addrs []string, exited <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ready := true
		for _, a := range addrs {
			c, err := net.DialTimeout("tcp", a, time.Second)
			if err != nil {
				ready = false
				break
			}
			_ = c.Close()
		}
		if ready {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("the server exited while starting")
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server did not listen on %v within %v", addrs, timeout)
		}
		time.Sleep(20 * time.Millisecond) // polling step, not an assertion
	}
}

// Stop sends cmd SIGTERM, then SIGKILL after grace, and returns once
// exited (closed by whoever waits for cmd) is closed.
func Stop(cmd *exec.Cmd, exited <-chan struct{}, grace time.Duration) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// Missing ends a test whose real server software or package is not on
// this machine: it fails the test under CI (where .ci/run installs
// everything the tests need, so a missing part is a broken run) and
// skips it elsewhere, with the reason given either way.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set but "+format, args...)
		return
	}
	t.Skipf(format, args...)
}
