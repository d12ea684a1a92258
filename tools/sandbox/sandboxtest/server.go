//go:build unix

package sandboxtest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// foreignServerEnv, set to the reply, makes a test binary started by
// ForeignServer serve instead of running tests (see ServeIfAsked).
const foreignServerEnv = "NANOBOT_TEST_FOREIGN_SERVER"

// ServeIfAsked serves as ForeignServer's process, and then never returns,
// when this test binary was started as one. Call it first thing in
// TestMain of packages that use ForeignServer.
func ServeIfAsked() {
	reply, ok := os.LookupEnv(foreignServerEnv)
	if !ok {
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "foreign server:", err)
		os.Exit(1)
	}
	go Serve(ln, reply)
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	// The test holds our stdin open: its end is ours.
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// ForeignServer starts this test binary again (its TestMain must call
// ServeIfAsked) as a TCP server in a process of its own, listening on
// 127.0.0.1 and answering every connection with reply, and returns its
// port. It stops with the test. A listener of another process is what a
// confined command may still reach with the network on: the sandbox walls
// off only the ports of the process that starts it.
func ForeignServer(t testing.TB, reply string) int {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), foreignServerEnv+"="+reply)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("foreign server: no port: %v", err)
	}
	port, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("foreign server: port %q: %v", line, err)
	}
	return port
}

// Serve answers every connection ln accepts with reply until ln is
// closed. It half-closes after the reply and reads what the client sends
// (for at most ten seconds) before it closes, so a client that sent a
// request (curl) is not reset before it has read the reply.
func Serve(ln net.Listener, reply string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_, _ = io.WriteString(c, reply)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, _ = io.Copy(io.Discard, c)
		}()
	}
}
