package gateway

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/testproc"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// A gateway that opens its own port answers /healthz as soon as New has
// the port, before the rest is assembled and Run starts it; readiness and
// everything else wait for Run. A New that fails gives the port back.
func TestHealthzBeforeRun(t *testing.T) {
	opts, port := earlyOptions(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)

	failNewFreesPort(t, opts, addr)

	g, err := New(t.Context(), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	status := func(path string) (int, string) { t.Helper(); return getStatus(t, addr, path) }
	checkStarting(t, status)
	runUntilReady(t, g, status)
}

// earlyOptions are a web-only gateway's options on a free port of
// 127.0.0.1 (set as gateway.host/port too).
func earlyOptions(t *testing.T) (Options, int) {
	t.Helper()
	ports, err := testproc.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(nil)
	cfg.Gateway.Host, cfg.Gateway.Port = "127.0.0.1", ports[0]
	return Options{
		Config: &cfg, Paths: configs.PathsFor(filepath.Join(t.TempDir(), "config.json"), &cfg),
		Provider: &echoLLM{}, Model: "test", Channels: webOnly(), DrainTimeout: 2 * time.Second, Stderr: io.Discard,
	}, ports[0]
}

// failNewFreesPort runs a New that fails (an unknown role) and checks
// that addr is free again afterwards.
func failNewFreesPort(t *testing.T, opts Options, addr string) {
	t.Helper()
	opts.Role = "bogus"
	if _, err := New(t.Context(), opts); err == nil {
		t.Fatal("New with an unknown role succeeded")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the port is still held after a failed New: %v", err)
	}
	ln.Close()
}

// getStatus GETs http://addr/path.
func getStatus(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// checkStarting checks the early answers: alive, not ready.
func checkStarting(t *testing.T, status func(string) (int, string)) {
	t.Helper()
	if code, body := status("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("before Run: /healthz %d %q, want 200 ok", code, body)
	}
	for _, path := range []string{"/readyz", "/api/status", "/"} {
		if code, body := status(path); code != http.StatusServiceUnavailable || body != "starting\n" {
			t.Errorf("before Run: %s %d %q, want 503 starting", path, code, body)
		}
	}
}

// runUntilReady runs g until the test ends and waits for /readyz.
func runUntilReady(t *testing.T, g *Gateway, status func(string) (int, string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("gateway did not stop")
		}
	})
	waitfor.True(t, "ready after Run", func() bool {
		code, _ := status("/readyz")
		return code == 200
	})
	if code, _ := status("/api/status"); code != 200 {
		t.Errorf("after Run: /api/status %d", code)
	}
}

// A listener opened with ListenEarly answers /healthz before New is even
// called (while the caller builds providers, tools and channels); New
// takes it over, gives the port back when it fails, and Run serves the
// full handler on it.
func TestListenEarlyHandedToNew(t *testing.T) {
	opts, port := earlyOptions(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	status := func(path string) (int, string) { t.Helper(); return getStatus(t, addr, path) }

	early, err := ListenEarly("127.0.0.1", port)
	if err != nil {
		t.Fatal(err)
	}
	checkStarting(t, status)
	opts.Early = early
	failNewFreesPort(t, opts, addr)

	if opts.Early, err = ListenEarly("127.0.0.1", port); err != nil {
		t.Fatal(err)
	}
	if _, err := ListenEarly("127.0.0.1", port); err == nil {
		t.Error("a second ListenEarly on the same port succeeded")
	}
	g, err := New(t.Context(), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	checkStarting(t, status)
	runUntilReady(t, g, status)
}
