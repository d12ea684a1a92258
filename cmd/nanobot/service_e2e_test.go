package main

import (
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
	if out, err := nb("gateway", "--background"); err == nil || !strings.Contains(out, "already runs") {
		t.Errorf("a second start: %v\n%s", err, out)
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
