package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/nanobot-go/nanobot/channels/web"
	"github.com/nanobot-go/nanobot/internal/owner"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds the real nanobot binary once per test run.
func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nanobot-e2e-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "nanobot")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// localConfig writes a config whose provider is the scripted server.
func localConfig(t *testing.T, srv *providertest.Server, port int) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config.json")
	body := fmt.Sprintf(`{
	  "agents": {"defaults": {"model": "test-model", "provider": "vllm"}},
	  "providers": {"vllm": {"apiBase": %q}},
	  "gateway": {"port": %d, "heartbeat": {"enabled": false}}
	}`, srv.OpenAIBase(), port)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestAgentOneShotBinary(t *testing.T) {
	bin := binary(t)
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "Hello from the scripted model."}, providertest.Reply{Text: "Second reply."})
	cfg := localConfig(t, srv, 18799)

	out, err := exec.Command(bin, "agent", "-m", "hello", "--config", cfg).Output()
	if err != nil {
		t.Fatalf("agent -m: %v", err)
	}
	if string(out) != "Hello from the scripted model.\n" {
		t.Errorf("stdout %q: want only the reply", out)
	}
	// The next call continues the same conversation (cli:direct).
	out, err = exec.Command(bin, "agent", "-m", "and again", "--config", cfg).Output()
	if err != nil || string(out) != "Second reply.\n" {
		t.Fatalf("second call: %q %v", out, err)
	}
	reqs := srv.Requests()
	if n := len(reqs[1].Messages()); n != 4 {
		t.Errorf("second request has %d messages, want system + 2 history + user", n)
	}

	// A provider failure exits non-zero with the reason on stderr.
	srv.Push(providertest.Reply{Status: 401})
	cmd := exec.Command(bin, "agent", "-m", "fail", "--config", cfg)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	if err == nil || len(out) != 0 || !strings.Contains(stderr.String(), "rejected the API key") {
		t.Errorf("failure: err %v, stdout %q, stderr %q", err, out, stderr.String())
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// instanceToken is the access token of the instance whose config file is
// cfg (the web chat wants it from every connection, loopback too).
func instanceToken(t *testing.T, cfg string) string {
	t.Helper()
	key, err := owner.Load(owner.Path(filepath.Join(filepath.Dir(cfg), "state")))
	if err != nil {
		t.Fatal(err)
	}
	return key.Token()
}

// startBinaryGateway runs `nanobot gateway` and waits for /readyz.
func startBinaryGateway(t *testing.T, bin, cfg string, port int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "gateway", "--config", cfg)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Log("gateway:", sc.Text())
		}
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	// Not the port alone: the gateway holds it (and answers /healthz)
	// before it is assembled; /readyz says 200 once it runs.
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return cmd
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("gateway did not become ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestKill9MidTurnLosesNothing: a message whose LLM reply is slow, the
// gateway killed with SIGKILL mid-turn, started again: the message is
// processed exactly once more and answered, and the session file is intact.
func TestKill9MidTurnLosesNothing(t *testing.T) {
	bin := binary(t)
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "too late", Delay: 60 * time.Second})
	port := freePort(t)
	cfg := localConfig(t, srv, port)

	first := startBinaryGateway(t, bin, cfg, port)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, fmt.Sprintf("ws://127.0.0.1:%d/ws", port), nil)
	if err != nil {
		t.Fatal(err)
	}
	const chat = "crash-test-chat"
	_ = wsjson.Write(ctx, ws, web.Frame{Type: "auth", Chat: chat, Token: instanceToken(t, cfg)})
	var hello web.Frame
	_ = wsjson.Read(ctx, ws, &hello)
	_ = wsjson.Write(ctx, ws, web.Frame{Type: "message", Text: "please remember this"})
	if got := srv.WaitRequests(1, 15*time.Second); len(got) != 1 {
		t.Fatalf("the LLM was not called (%d requests)", len(got))
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = first.Process.Wait()
	ws.CloseNow()

	srv.Push(providertest.Reply{Text: "Noted: remembered."})
	startBinaryGateway(t, bin, cfg, port)
	if got := srv.WaitRequests(2, 15*time.Second); len(got) != 2 {
		t.Fatalf("message not replayed after the crash (%d requests)", len(got))
	}
	sessFile := filepath.Join(filepath.Dir(cfg), "sessions", "web%3A"+chat+".jsonl")
	var lines []string
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(sessFile)
		lines = strings.Split(strings.TrimSpace(string(b)), "\n")
		if strings.Contains(string(b), "Noted: remembered.") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	joined := strings.Join(lines, "\n")
	if strings.Count(joined, "please remember this") != 1 || strings.Count(joined, "Noted: remembered.") != 1 {
		t.Fatalf("session file after replay:\n%s", joined)
	}
	// A later message in the same chat is answered after anything queued
	// before it (one chat's messages run in order), so once its request is
	// in, a duplicate replay would already have reached the model.
	srv.Push(providertest.Reply{Text: "And this too."})
	ws2, _, err := websocket.Dial(ctx, fmt.Sprintf("ws://127.0.0.1:%d/ws", port), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws2.CloseNow()
	_ = wsjson.Write(ctx, ws2, web.Frame{Type: "auth", Chat: chat, Token: instanceToken(t, cfg)})
	_ = wsjson.Read(ctx, ws2, &hello)
	_ = wsjson.Write(ctx, ws2, web.Frame{Type: "message", Text: "one more thing"})
	got := srv.WaitRequests(3, 15*time.Second)
	if len(got) != 3 {
		t.Fatalf("the later message did not reach the model (%d requests)", len(got))
	}
	msgs := got[2].Messages()
	if last := fmt.Sprint(msgs[len(msgs)-1]["content"]); !strings.Contains(last, "one more thing") {
		t.Errorf("third LLM request ends with %q, want the later message (a duplicate replay came first)", last)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d LLM requests, want exactly 3 (the killed turn, its one replay, the later message)", n)
	}
}
