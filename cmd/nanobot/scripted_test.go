package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/syncbuf"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// scriptedConfig writes dir/config.json for the gateway binary on the
// scripted model, with the channels, tools and heartbeat settings given as
// JSON members, on a free port; it returns the file's path.
func scriptedConfig(t *testing.T, dir string, llm *providertest.Server, channels, toolSettings, heartbeat string) string {
	t.Helper()
	cfg := filepath.Join(dir, "config.json")
	body := fmt.Sprintf(`{
	  "agents": {"defaults": {"model": "test-model", "provider": "vllm"}},
	  "providers": {"vllm": {"apiBase": %q, "apiKey": "k"}},
	  "channels": {%s},
	  "tools": {%s},
	  "gateway": {"port": %d, "heartbeat": {%s}}
	}`, llm.OpenAIBase(), channels, toolSettings, freePort(t), heartbeat)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// gatewayProc is a `nanobot gateway` a test runs, with HOME in its folder.
type gatewayProc struct {
	cmd    *exec.Cmd
	logs   *syncbuf.Buffer
	exited chan error // the process's end, once
	once   sync.Once
}

// launchGateway starts the binary on cfg; the test's end stops it (and
// prints its log when the test failed).
func launchGateway(t *testing.T, cfg string) *gatewayProc {
	t.Helper()
	g := &gatewayProc{cmd: exec.Command(binary(t), "gateway", "--config", cfg), logs: &syncbuf.Buffer{}, exited: make(chan error, 1)}
	g.cmd.Env = append(os.Environ(), "HOME="+filepath.Dir(cfg))
	g.cmd.Stdout, g.cmd.Stderr = g.logs, g.logs
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { g.exited <- g.cmd.Wait() }()
	t.Cleanup(func() {
		g.stop()
		if t.Failed() {
			t.Logf("gateway log:\n%s", g.logs.String())
		}
	})
	return g
}

// stop sends SIGTERM and waits for the process (killing it after 20 s).
func (g *gatewayProc) stop() {
	g.once.Do(func() {
		_ = g.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-g.exited:
		case <-time.After(20 * time.Second):
			_ = g.cmd.Process.Kill()
			<-g.exited
		}
	})
}

// toolCall is a scripted reply calling one tool.
func toolCall(id, name, args string) providertest.Reply {
	return providertest.Reply{ToolCalls: []providertest.ToolCall{{ID: id, Name: name, Arguments: args}}}
}

// turnOf reads a request of a scripted conversation: the current turn's
// user message, and whether the result of tool call id is in the turn.
// Turns of several chats may interleave, so a script answers by these
// rather than by the order of the requests.
func turnOf(r providertest.Request) (user string, after func(id string) bool) {
	raw := string(r.Raw)
	turn := raw[max(strings.LastIndex(raw, `"role":"user"`), 0):]
	user, _, _ = strings.Cut(turn, `"}`)
	return user, func(id string) bool { return strings.Contains(turn, `"tool_call_id":"`+id+`"`) }
}
