package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
)

// soakAPIKey is the api.apiKey of the soak's gateways.
const soakAPIKey = "soak-api-key-5f1c0e9a7d3b4c2e"

// soakIdleTimeout is agents.defaults.streamIdleTimeoutS in the soak: short,
// so a stalled model stream costs seconds, not the default 90.
const soakIdleTimeout = 6 * time.Second

// writeSoakConfig writes the config every process of the soak shares.
func writeSoakConfig(path, llmBase, telegramBase, natsURL string) error {
	cfg := map[string]any{
		"agents": map[string]any{"defaults": map[string]any{
			"model": "bench-model", "provider": "vllm", "maxRepliesPerMinute": 0, "maxConcurrentTurns": 16,
			"streamIdleTimeoutS": int(soakIdleTimeout / time.Second),
			// One answer per message: what the driver counts. (The model
			// echoes every unanswered marker, so steer or collect would
			// count right too; queue keeps the figures plain.)
			"queue": map[string]any{"mode": "queue"},
		}},
		"providers": map[string]any{"vllm": map[string]any{"apiBase": llmBase}},
		"channels": map[string]any{"sendProgress": false, "sendToolHints": false,
			"telegram": map[string]any{"enabled": true, "token": telegramtest.Token, "apiBase": telegramBase, "allowFrom": []string{"*"}}},
		"gateway": map[string]any{"host": "127.0.0.1", "heartbeat": map[string]any{"enabled": false}},
		"api":     map[string]any{"enabled": true, "apiKey": soakAPIKey},
	}
	if natsURL != "" {
		cfg["cluster"] = map[string]any{"nats": map[string]any{"url": natsURL}}
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// soakProc is one gateway process of the soak, killed and started again
// on the same port, config and home.
type soakProc struct {
	name, role string // role "" is the single-process gateway
	port       int
	bin, cfg   string
	home, logs string
	log        *log.Logger

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	started time.Time
	runs    int // how many times it was started
}

func (p *soakProc) addr() string { return "127.0.0.1:" + strconv.Itoa(p.port) }

// start spawns the process and waits until it is ready.
func (p *soakProc) start(ctx context.Context) error {
	var err error
	for attempt := range 3 {
		if err = p.spawn(ctx); err == nil {
			return nil
		}
		p.log.Printf("%s: start %d failed: %v", p.name, attempt+1, err)
		time.Sleep(time.Second)
	}
	return err
}

func (p *soakProc) spawn(ctx context.Context) error {
	logf, err := os.OpenFile(p.logs, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "=== soak: start %s at %s\n", p.name, time.Now().Format(time.RFC3339Nano))
	args := []string{"gateway", "--config", p.cfg, "--port", strconv.Itoa(p.port)}
	if p.role != "" {
		args = append(args, "--role", p.role)
	}
	cmd := exec.Command(p.bin, args...)
	cmd.Env = []string{"HOME=" + p.home, "PATH=" + os.Getenv("PATH"), "TZ=UTC"}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	p.mu.Lock()
	p.cmd, p.done, p.started = cmd, done, time.Now()
	p.runs++
	p.mu.Unlock()

	// A worker serves no channel, so /readyz says nothing about it; it is
	// up once it answers at all.
	probe := "/readyz"
	if p.role == "worker" {
		probe = "/healthz"
	}
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := client.Get("http://" + p.addr() + probe); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-done:
			return fmt.Errorf("%s exited before ready (log: %s)", p.name, p.logs)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	p.kill9()
	return fmt.Errorf("%s not ready after 60 s (log: %s)", p.name, p.logs)
}

// kill9 kills the process with SIGKILL and waits for it.
func (p *soakProc) kill9() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// stop asks the process to shut down (SIGTERM) and waits for it.
func (p *soakProc) stop() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		p.kill9()
	}
}

// running returns the pid and start of the live process.
func (p *soakProc) running() (pid int, started time.Time, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0, time.Time{}, false
	}
	select {
	case <-p.done:
		return 0, time.Time{}, false
	default:
	}
	return p.cmd.Process.Pid, p.started, true
}

// resSample is one reading of a process's resources.
type resSample struct {
	Proc       string
	At         time.Time
	Age        time.Duration // since this run of the process started
	Goroutines int           // go_goroutines from /metrics (-1: unread)
	FDs        int           // entries of /proc/<pid>/fd
	RSS        int64         // VmRSS, bytes
}

// sample reads the process's goroutines, open files and RSS.
func (p *soakProc) sample(ctx context.Context) (resSample, bool) {
	pid, started, ok := p.running()
	if !ok {
		return resSample{}, false
	}
	s := resSample{Proc: p.name, At: time.Now(), Age: time.Since(started), Goroutines: -1}
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		s.FDs = len(ents)
	} else {
		return resSample{}, false
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				f := strings.Fields(v)
				if len(f) > 0 {
					kb, _ := strconv.ParseInt(f[0], 10, 64)
					s.RSS = kb * 1024
				}
			}
		}
	}
	if g, err := readMetric(ctx, p.addr(), "go_goroutines"); err == nil {
		s.Goroutines = int(g)
	}
	return s, true
}

// readMetric reads one unlabelled value from a gateway's /metrics.
func readMetric(ctx context.Context, addr, name string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, errors.New("metric " + name + " not found")
}

// soakProcs creates the processes of a mode in home, logging into logs.
func soakProcs(mode string, workers int, bin, cfg, home, logs string, lg *log.Logger) ([]*soakProc, error) {
	names := []struct{ name, role string }{{"gateway", ""}}
	if mode == "cluster" {
		names = []struct{ name, role string }{{"channels", "channels"}}
		for i := range workers {
			names = append(names, struct{ name, role string }{fmt.Sprint("worker-", i+1), "worker"})
		}
	}
	var out []*soakProc
	for _, n := range names {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		out = append(out, &soakProc{name: n.name, role: n.role, port: port, bin: bin, cfg: cfg, home: home,
			logs: filepath.Join(logs, n.name+".log"), log: lg})
	}
	return out, nil
}
