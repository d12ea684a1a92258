package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// TestGatewayServiceControls drives the real binary: --background starts
// a detached gateway that answers, writes its pidfile and logs to
// logs/gateway.log; a second start is refused; status, logs, restart and
// stop work on it; after stop status says it is not running; a stale
// pidfile (a crash) does not block the next start.
func TestGatewayServiceControls(t *testing.T) {
	bin := binary(t)
	port := freePort(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	body := `{"gateway": {"port": ` + strconv.Itoa(port) + `, "heartbeat": {"enabled": false}}}`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	nb := func(args ...string) (string, error) {
		out, err := exec.Command(bin, append(args, "--config", cfg)...).CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() { _, _ = nb("gateway", "stop") })
	pidOf := func() int {
		data, _ := os.ReadFile(filepath.Join(dir, "state", "gateway.pid"))
		f := strings.Fields(string(data))
		if len(f) == 0 {
			return 0
		}
		n, _ := strconv.Atoi(f[0])
		return n
	}

	out, err := nb("gateway", "--background")
	if err != nil || !strings.Contains(out, "running in the background (pid") {
		t.Fatalf("--background: %v\n%s", err, out)
	}
	first := pidOf()
	if first == 0 || !processAlive(first) {
		t.Fatalf("pidfile names %d", first)
	}
	if !strings.Contains(out, "(pid "+strconv.Itoa(first)+")") {
		t.Errorf("--background names another pid than the pidfile's %d:\n%s", first, out)
	}
	if out, err := nb("gateway", "--background"); err == nil || !strings.Contains(out, "already runs") {
		t.Errorf("a second start: %v\n%s", err, out)
	}
	// In the foreground too, on the same port: the pidfile is named, not
	// the port.
	if out, err := nb("gateway"); err == nil || !strings.Contains(out, "another gateway already runs on this instance (pid "+strconv.Itoa(first)) {
		t.Errorf("a second start in the foreground: %v\n%s", err, out)
	}
	if out, err := nb("gateway", "status"); err != nil || !strings.Contains(out, "pid "+strconv.Itoa(first)) || !strings.Contains(out, "(running") {
		t.Errorf("status: %v\n%s", err, out)
	}
	if out, err := nb("gateway", "logs", "-n", "200"); err != nil || !strings.Contains(out, "gateway ready") {
		t.Errorf("logs: %v\n%s", err, out)
	}
	if out, err := nb("gateway", "restart"); err != nil || !strings.Contains(out, "gateway stopped (pid "+strconv.Itoa(first)) || !strings.Contains(out, "running in the background") {
		t.Fatalf("restart: %v\n%s", err, out)
	}
	second := pidOf()
	if second == first || !processAlive(second) || processAlive(first) {
		t.Errorf("after restart: pid %d (alive %v), the old %d alive %v", second, processAlive(second), first, processAlive(first))
	}
	if out, err := nb("gateway", "stop"); err != nil || !strings.Contains(out, "gateway stopped") {
		t.Fatalf("stop: %v\n%s", err, out)
	}
	waitfor.Within(t, "the stopped gateway's pidfile to go", 10*time.Second, func() bool { return pidOf() == 0 })
	if out, err := nb("gateway", "status"); err == nil || !strings.Contains(out, "not running") {
		t.Errorf("status after stop: %v\n%s", err, out)
	}
	if out, err := nb("gateway", "stop"); err == nil || !strings.Contains(out, "no gateway runs") {
		t.Errorf("stop with nothing running: %v\n%s", err, out)
	}

	// A crash leaves the pidfile behind, naming a process that is gone.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := strconv.Itoa(dead.Process.Pid) + " 1\n"
	if err := os.WriteFile(filepath.Join(dir, "state", "gateway.pid"), []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := nb("gateway", "--background"); err != nil || !strings.Contains(out, "running in the background") {
		t.Fatalf("start over a stale pidfile: %v\n%s", err, out)
	}
}

// TestBackgroundStartThatFails: a gateway that cannot start (its port is
// taken) makes --background fail with the end of its log, and leaves no
// pidfile behind.
func TestBackgroundStartThatFails(t *testing.T) {
	bin := binary(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	body := `{"gateway": {"port": ` + strconv.Itoa(taken.Addr().(*net.TCPAddr).Port) + `, "heartbeat": {"enabled": false}}}`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "gateway", "--background", "--config", cfg).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "exited at start") || !strings.Contains(string(out), "address already in use") {
		t.Errorf("--background on a taken port: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "gateway.pid")); !os.IsNotExist(err) {
		t.Errorf("a pidfile is left behind: %v", err)
	}
}
