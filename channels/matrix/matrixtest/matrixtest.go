// Package matrixtest runs a real Matrix homeserver, Dendrite, for tests:
// SQLite storage in a temporary folder, open registration, a random
// loopback port, stopped when the test ends. Tests reach it through a small
// TCP proxy that can cut every connection (Drop), to test reconnection.
//
// The Dendrite binaries are built by .ci/run into $NANOBOT_TEST_DENDRITE
// (default ~/.cache/nanobot-ci/dendrite/bin). Without them the tests skip
// with a message, except under CI, where they fail.
//
// Concurrency: Dendrite runs in a process of its own, and the proxy accepts
// and copies each connection on goroutines of its own; Drop may be called
// from any goroutine. Start, Register and a Device's methods that take a
// testing.TB fail through it and belong to the goroutine running the test. A
// Device syncs on a goroutine of its own until the test ends; Seen may be
// read from any goroutine while it runs.
package matrixtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/testproc"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"
)

// ServerName is the homeserver's name: user ids are @name:localhost.
const ServerName = "localhost"

// Dir is where the Dendrite binaries are looked for.
func Dir() string {
	if d := os.Getenv("NANOBOT_TEST_DENDRITE"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "nanobot-ci", "dendrite", "bin")
}

// Server is a running Dendrite.
type Server struct {
	// URL is the client-server API base through the proxy.
	URL string
	// Direct is the base without the proxy (for the test's own users).
	Direct string

	proxy *proxy
	users atomic.Int64
}

// Start starts Dendrite; it is stopped when tb ends. Without the binaries
// the test is skipped, or fails under CI.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, stop, err := Launch()
	if errors.Is(err, ErrNotInstalled) {
		testproc.Missing(tb, "%v", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(stop)
	return s
}

// ErrNotInstalled is returned by Launch when the binaries are missing.
var ErrNotInstalled = errors.New("matrixtest: Dendrite not installed")

// Launch starts Dendrite for a whole test binary (from TestMain); stop
// ends it and removes its files.
func Launch() (s *Server, stop func(), err error) {
	bin := Dir()
	for _, name := range []string{"dendrite", "generate-config", "generate-keys"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			return nil, nil, fmt.Errorf("%w in %s (run .ci/run, or: GOBIN=%s go install github.com/matrix-org/dendrite/cmd/{dendrite,generate-config,generate-keys}@v0.13.8)", ErrNotInstalled, bin, bin)
		}
	}
	dir, err := os.MkdirTemp("", "matrixtest-")
	if err != nil {
		return nil, nil, err
	}
	var cleanups []func()
	stop = func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
		os.RemoveAll(dir)
	}
	fail := func(err error) (*Server, func(), error) { stop(); return nil, nil, err }
	run := func(name string, args ...string) ([]byte, error) {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("matrixtest: %s: %w", name, err)
		}
		return out, nil
	}
	if _, err := run("generate-keys", "--private-key", "matrix_key.pem"); err != nil {
		return fail(err)
	}
	cfg, err := run("generate-config", "-ci", "-dir", dir, "-server", ServerName)
	if err != nil {
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dendrite.yaml"), cfg, 0o600); err != nil {
		return fail(err)
	}
	port, err := freePort()
	if err != nil {
		return fail(err)
	}
	logs := &tailWriter{}
	cmd := exec.Command(filepath.Join(bin, "dendrite"), "-config", "dendrite.yaml",
		"-http-bind-address", fmt.Sprintf("127.0.0.1:%d", port), "-https-bind-address", "",
		"-really-enable-open-registration")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logs, logs
	if err := cmd.Start(); err != nil {
		return fail(fmt.Errorf("matrixtest: start dendrite: %w", err))
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	cleanups = append(cleanups, func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	direct := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(direct + "/_matrix/client/versions")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-exited:
			return fail(fmt.Errorf("matrixtest: dendrite exited:\n%s", logs.String()))
		default:
		}
		if time.Now().After(deadline) {
			return fail(fmt.Errorf("matrixtest: dendrite not ready:\n%s", logs.String()))
		}
		time.Sleep(50 * time.Millisecond)
	}
	p, err := startProxy(fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return fail(err)
	}
	cleanups = append(cleanups, p.close)
	return &Server{URL: "http://" + p.addr, Direct: direct, proxy: p}, stop, nil
}

// Drop closes every connection through the proxy, as a network failure
// would; new connections work.
func (s *Server) Drop() { s.proxy.drop() }

// User is a registered account with a client on the direct URL.
type User struct {
	ID    id.UserID
	Token string
	*mautrix.Client
}

// Register creates a user whose localpart starts with prefix (made unique).
func (s *Server) Register(tb testing.TB, prefix string) *User {
	tb.Helper()
	name := fmt.Sprintf("%s%d", strings.ToLower(prefix), s.users.Add(1))
	cli, err := mautrix.NewClient(s.Direct, "", "")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cli.RegisterDummy(ctx, &mautrix.ReqRegister[any]{Username: name, Password: "pw-" + name + "-long-enough"})
	if err != nil {
		tb.Fatalf("matrixtest: register %s: %v", name, err)
	}
	cli.SetCredentials(resp.UserID, resp.AccessToken)
	cli.DeviceID = resp.DeviceID
	return &User{ID: resp.UserID, Token: resp.AccessToken, Client: cli}
}

// Password is the password Register gave a user.
func Password(u *User) string { return "pw-" + u.ID.Localpart() + "-long-enough" }

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// tailWriter keeps the last few KiB of the homeserver's output, for the
// message when it fails to start.
type tailWriter struct {
	mu sync.Mutex
	b  []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if len(w.b) > 8<<10 {
		w.b = append([]byte(nil), w.b[len(w.b)-4<<10:]...)
	}
	return len(p), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}

// proxy forwards TCP connections to the homeserver and can cut them all.
type proxy struct {
	addr   string
	target string
	ln     net.Listener

	mu    sync.Mutex
	conns map[net.Conn]bool
}

func startProxy(target string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]bool{}}
	go p.accept()
	return p, nil
}

func (p *proxy) close() { p.ln.Close(); p.drop() }

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.serve(c)
	}
}

func (p *proxy) serve(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

func (p *proxy) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}
