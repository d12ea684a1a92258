package mochattest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/testproc"
)

// SocketIO is a real Socket.IO server (node and the npm socket.io package,
// testdata/sioserver.js) pushing the fake's sessions and panels: once it
// is attached, every Say and Post is also emitted to the subscribed
// sockets as claw.session.events / claw.panel.events.
type SocketIO struct {
	// URL is the server's base URL (http://127.0.0.1:PORT) and Path its
	// Socket.IO path.
	URL, Path string

	stdin io.WriteCloser
	mu    sync.Mutex
	lines []string
	wmu   sync.Mutex
}

// StartSocketIO starts the server for s with the given Socket.IO path,
// accepting clients whose auth token is token (normally Token), and
// attaches it. It skips the test when node or the socket.io package
// (NANOBOT_TEST_NODE_MODULES) is missing, and fails instead under CI.
func StartSocketIO(t testing.TB, s *Server, path, token string) *SocketIO {
	t.Helper()
	mods := os.Getenv("NANOBOT_TEST_NODE_MODULES")
	if mods == "" {
		if home, err := os.UserHomeDir(); err == nil {
			mods = filepath.Join(home, ".cache", "nanobot-ci", "node", "node_modules")
		}
	}
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(filepath.Join(mods, "socket.io", "package.json")); err != nil || serr != nil {
		testproc.Missing(t, "node or the socket.io npm package in NANOBOT_TEST_NODE_MODULES (%s; set by .ci/run) is missing", mods)
	}
	_, here, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(here), "testdata", "sioserver.js")
	cmd := exec.Command(node, script, token, s.URL, path)
	cmd.Env = append(os.Environ(), "NODE_MODULES="+mods)
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
		t.Fatalf("start the Socket.IO server: %v", err)
	}
	sio := &SocketIO{Path: path, stdin: stdin}
	port := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if p, ok := strings.CutPrefix(line, "listening "); ok {
				port <- p
				continue
			}
			sio.mu.Lock()
			sio.lines = append(sio.lines, line)
			sio.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		stdin.Close() // the script exits when stdin ends
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = cmd.Wait()
	})
	select {
	case p := <-port:
		sio.URL = "http://127.0.0.1:" + p
	case <-done:
		t.Fatal("the Socket.IO server exited before listening")
	case <-time.After(20 * time.Second):
		t.Fatal("the Socket.IO server did not start within 20s")
	}
	s.mu.Lock()
	s.push = sio.emit
	s.mu.Unlock()
	return sio
}

func (sio *SocketIO) send(v any) {
	b, _ := json.Marshal(v)
	sio.wmu.Lock()
	defer sio.wmu.Unlock()
	_, _ = fmt.Fprintf(sio.stdin, "%s\n", b)
}

func (sio *SocketIO) emit(room, event string, payload any) {
	sio.send(map[string]any{"room": room, "event": event, "payload": payload})
}

// DisconnectAll drops every client connection from the server side.
func (sio *SocketIO) DisconnectAll() { sio.send(map[string]any{"cmd": "disconnect"}) }

// Seen reports how many lines the server printed that start with prefix
// ("connect", "refused", "subscribe-sessions", "subscribe-panels",
// "disconnect").
func (sio *SocketIO) Seen(prefix string) int {
	sio.mu.Lock()
	defer sio.mu.Unlock()
	n := 0
	for _, l := range sio.lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// Lines returns everything the server printed so far.
func (sio *SocketIO) Lines() []string {
	sio.mu.Lock()
	defer sio.mu.Unlock()
	return slices.Clone(sio.lines)
}
