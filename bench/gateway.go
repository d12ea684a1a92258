package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nanobot-go/nanobot/channels/discord/discordtest"
	"github.com/nanobot-go/nanobot/channels/slack/slacktest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/internal/owner"
)

// buildBinary builds the stripped binary the way a release would.
func buildBinary(work string) (string, int64, error) {
	return buildBinaryNamed(work, "nanobot", "goolm")
}

// buildSlimBinary builds it with every platform a build tag can leave out
// left out (the tags are read from the names of cmd/nanobot's
// platform_<name>.go files, each behind nanobot_omit_<name>).
func buildSlimBinary(work string) (string, int64, error) {
	files, err := filepath.Glob("cmd/nanobot/platform_*.go")
	if err != nil || len(files) == 0 {
		return "", 0, fmt.Errorf("no cmd/nanobot/platform_*.go files (%v): run from the module root", err)
	}
	tags := []string{"goolm"}
	for _, f := range files {
		tags = append(tags, "nanobot_omit_"+strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "platform_"), ".go"))
	}
	return buildBinaryNamed(work, "nanobot-slim", strings.Join(tags, ","))
}

// buildBinaryNamed builds it into work/name with the build tags tags; the
// bench runs from the module root.
func buildBinaryNamed(work, name, tags string) (string, int64, error) {
	bin, err := filepath.Abs(filepath.Join(work, name))
	if err != nil {
		return "", 0, err
	}
	cmd := exec.Command("go", "build", "-tags", tags, "-trimpath", "-ldflags", "-s -w", "-o", bin, "./cmd/nanobot")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", 0, fmt.Errorf("go build: %v\n%s", err, out)
	}
	st, err := os.Stat(bin)
	if err != nil {
		return "", 0, err
	}
	return bin, st.Size(), nil
}

// gwOptions shape one gateway run.
type gwOptions struct {
	// Channels enables Telegram, Slack and Discord (the web chat is always on).
	Channels bool
	// Cap is agents.defaults.maxConcurrentTurns (0 = the default).
	Cap int
	// Telegram, when set, enables only Telegram (and the web chat), on this
	// fake instead of the shared one.
	Telegram *telegramtest.Server
	// NoTrim sets gateway.trimCodePages to false.
	NoTrim bool
	// Probe is the endpoint startGateway waits for (default /readyz).
	Probe string
	// Defaults leaves the agent's, channels' and gateway's settings at
	// their defaults (progress messages, heartbeat, profiles off): only the
	// provider, the port, the enabled channels and a reply cap of 0 are
	// written.
	Defaults bool
}

// gateway is a running `nanobot gateway` child.
type gateway struct {
	cmd  *exec.Cmd
	addr string
	dir  string
	logf *os.File
	done chan error
	// started is when the process was spawned.
	started time.Time
}

// writeConfig writes a config.json in dir for the fakes.
func writeConfig(dir string, fx *fakes, port int, o gwOptions) (string, error) {
	// No reply cap: the bench sends far more than 20 messages a minute
	// into one chat.
	defaults := map[string]any{"model": "bench-model", "provider": "vllm", "maxRepliesPerMinute": 0}
	if o.Cap > 0 {
		defaults["maxConcurrentTurns"] = o.Cap
	}
	chans := map[string]any{"sendProgress": false, "sendToolHints": false}
	if o.Defaults {
		// The reply cap stays off: 50 messages in a few seconds into one
		// chat would trip it, and its wait is not latency.
		defaults = map[string]any{"model": "bench-model", "provider": "vllm", "maxRepliesPerMinute": 0}
		chans = map[string]any{}
	}
	if o.Channels {
		chans["telegram"] = map[string]any{"enabled": true, "token": telegramtest.Token, "apiBase": fx.telegram.URL, "allowFrom": []string{"*"}}
		chans["slack"] = map[string]any{"enabled": true, "appToken": slacktest.AppToken, "botToken": slacktest.BotToken, "apiBase": fx.slack.APIBase(), "allowFrom": []string{"*"}}
		chans["discord"] = map[string]any{"enabled": true, "token": discordtest.Token, "apiBase": fx.discord.URL, "allowFrom": []string{"*"}}
	}
	if o.Telegram != nil {
		chans["telegram"] = map[string]any{"enabled": true, "token": telegramtest.Token, "apiBase": o.Telegram.URL, "allowFrom": []string{"*"}}
	}
	gw := map[string]any{"host": "127.0.0.1", "port": port, "heartbeat": map[string]any{"enabled": false}, "pprof": true}
	if o.Defaults {
		gw = map[string]any{"host": "127.0.0.1", "port": port}
	}
	if o.NoTrim {
		gw["trimCodePages"] = false
	}
	cfg := map[string]any{
		"agents":    map[string]any{"defaults": defaults},
		"providers": map[string]any{"vllm": map[string]any{"apiBase": fx.llm.OpenAIBase()}},
		"channels":  chans,
		"gateway":   gw,
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "config.json")
	return path, os.WriteFile(path, b, 0o600)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startGateway starts the binary on a config in dir (created if needed)
// and returns once /readyz (or o.Probe) answers 200, with the time from
// the spawn to that answer.
func startGateway(bin, dir string, fx *fakes, o gwOptions) (*gateway, time.Duration, error) {
	g, err := spawnGateway(bin, dir, fx, o)
	if err != nil {
		return nil, 0, err
	}
	probe := o.Probe
	if probe == "" {
		probe = "/readyz"
	}
	client := &http.Client{Timeout: time.Second}
	deadline := g.started.Add(30 * time.Second)
	for {
		resp, err := client.Get("http://" + g.addr + probe)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return g, time.Since(g.started), nil
			}
		}
		select {
		case err := <-g.done:
			g.logf.Close()
			return nil, 0, fmt.Errorf("gateway exited before ready: %v (log: %s)", err, filepath.Join(dir, "gateway.log"))
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			g.stop()
			return nil, 0, fmt.Errorf("gateway not ready after 30 s (log: %s)", filepath.Join(dir, "gateway.log"))
		}
	}
}

// spawnGateway writes the config in dir (created if needed) and starts
// the binary on it, without waiting for anything.
func spawnGateway(bin, dir string, fx *fakes, o gwOptions) (*gateway, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cfg, err := writeConfig(dir, fx, port, o)
	if err != nil {
		return nil, err
	}
	env := []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "TZ=UTC"}
	if v := os.Getenv("NANOBOT_BENCH_GODEBUG"); v != "" {
		// e.g. memprofilerate=4096: heap profiles (-profiles) fine enough
		// to see small per-session entries.
		env = append(env, "GODEBUG="+v)
	}
	return spawnProcess(dir, fmt.Sprintf("127.0.0.1:%d", port), env, bin, "gateway", "--config", cfg)
}

// spawnProcess starts a gateway process (ours or a peer's) with its
// output in dir/gateway.log.
func spawnProcess(dir, addr string, env []string, bin string, args ...string) (*gateway, error) {
	logf, err := os.OpenFile(filepath.Join(dir, "gateway.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	g := &gateway{addr: addr, dir: dir, logf: logf, done: make(chan error, 1)}
	g.cmd = exec.Command(bin, args...)
	if w := os.Getenv("NANOBOT_BENCH_WRAP"); w != "" {
		// e.g. a script running `perf record -g -o <unique file> -- "$@"`:
		// profiles of the start-up, the first turn included.
		parts := strings.Fields(w)
		g.cmd = exec.Command(parts[0], append(append(parts[1:], bin), args...)...)
	}
	g.cmd.Env = env
	g.cmd.Stdout, g.cmd.Stderr = logf, logf
	g.started = time.Now()
	if err := g.cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() { g.done <- g.cmd.Wait() }()
	return g, nil
}

// stop asks the gateway to shut down (SIGTERM) and waits for it.
func (g *gateway) stop() {
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.done:
	case <-time.After(20 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.done
	}
	g.logf.Close()
}

// memory reads the child's resident and proportional set sizes.
func (g *gateway) memory() (rss, pss int64, err error) {
	m, err := g.smaps()
	return m["Rss:"], m["Pss:"], err
}

// smaps reads the child's /proc/<pid>/smaps_rollup as bytes per field
// ("Rss:", "Pss:", "Anonymous:", ...).
func (g *gateway) smaps() (map[string]int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", g.cmd.Process.Pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := make(map[string]int64)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || fields[2] != "kB" {
			continue
		}
		kb, _ := strconv.ParseInt(fields[1], 10, 64)
		m[fields[0]] = kb * 1024
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if m["Rss:"] == 0 {
		return nil, errors.New("no Rss line in smaps_rollup")
	}
	return m, nil
}

// metric reads one unlabelled value from /metrics.
// saveHeap writes the gateway's heap profile (after a GC) to path, for
// `go tool pprof -sample_index=inuse_space -diff_base a b`.
func (g *gateway) saveHeap(ctx context.Context, path string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+g.addr+"/debug/pprof/heap?gc=1", nil)
	// Profiles need the instance's access token, which the gateway keeps
	// in the state folder beside its config.
	key, err := owner.Load(owner.Path(filepath.Join(g.dir, "state")))
	if err != nil {
		return fmt.Errorf("heap profile: the access token: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+key.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("heap profile: HTTP %d", resp.StatusCode)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (g *gateway) metric(ctx context.Context, name string) (float64, error) {
	return readMetric(ctx, g.addr, name)
}
