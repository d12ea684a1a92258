//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	"github.com/nanobot-go/nanobot/channels/web"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestExecSessionEndToEnd drives the real gateway with a scripted model
// that, asked in the web chat, starts a long-running command with exec
// yield_time_ms, types into it with write_stdin and reads the echo; when
// the gateway stops, the session's processes (the shell and a job it left
// in the background) are gone.
func TestExecSessionEndToEnd(t *testing.T) {
	bin := binary(t)
	srv := providertest.New(t)
	idRe := regexp.MustCompile(`session_id: ([0-9a-f]+)`)
	srv.Push(providertest.Reply{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "exec",
		Arguments: `{"command": "(trap '' HUP; exec sleep 1000) & echo bg=$! leader=$$ end; exec cat", "yield_time_ms": 2000}`}}})
	srv.Handle(func(r providertest.Request) providertest.Reply {
		msgs := r.Messages()
		last := msgs[len(msgs)-1]
		content, _ := last["content"].(string)
		if m := idRe.FindStringSubmatch(content); last["role"] == "tool" && m != nil && !strings.Contains(content, "marco") {
			return providertest.Reply{ToolCalls: []providertest.ToolCall{{ID: "c2", Name: "write_stdin",
				Arguments: fmt.Sprintf(`{"session_id": %q, "chars": "marco\n", "wait_for": "marco\nmarco"}`, m[1])}}}
		}
		return providertest.Reply{Text: "Typed into the session."}
	})
	port := freePort(t)
	cfg := filepath.Join(t.TempDir(), "config.json")
	// Unconfined, so that the pids the shell prints are the host's.
	body := fmt.Sprintf(`{
	  "agents": {"defaults": {"model": "test-model", "provider": "vllm"}},
	  "providers": {"vllm": {"apiBase": %q}},
	  "tools": {"exec": {"sandbox": "none"}},
	  "gateway": {"port": %d, "heartbeat": {"enabled": false}}
	}`, srv.OpenAIBase(), port)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	gw := startBinaryGateway(t, bin, cfg, port)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, fmt.Sprintf("ws://127.0.0.1:%d/ws", port), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	var hello web.Frame
	_ = wsjson.Write(ctx, ws, web.Frame{Type: "auth", Chat: "session-chat", Token: instanceToken(t, cfg)})
	_ = wsjson.Read(ctx, ws, &hello)
	_ = wsjson.Write(ctx, ws, web.Frame{Type: "message", Text: "start cat and say marco"})
	if got := srv.WaitRequests(3, 20*time.Second); len(got) != 3 {
		t.Fatalf("%d model requests, want 3 (exec, write_stdin, the reply)", len(got))
	}
	// The session is still running; stopping the gateway ends it.
	if err := gw.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, err := gw.Process.Wait(); err != nil {
		t.Fatal(err)
	}

	var started, typed string
	for _, r := range srv.Requests() {
		for _, m := range r.Messages() {
			if c, _ := m["content"].(string); m["role"] == "tool" {
				switch {
				case strings.Contains(c, "leader="):
					started = c
				case strings.Contains(c, "marco"):
					typed = c
				}
			}
		}
	}
	if !strings.Contains(started, "Process running. session_id: ") {
		t.Fatalf("exec's answer:\n%s\nwant a running session", started)
	}
	if !strings.HasPrefix(typed, "marco\nmarco\n") || !strings.Contains(typed, "Process running.") {
		t.Errorf("write_stdin's answer:\n%s\nwant the terminal's echo and cat's copy", typed)
	}
	// The gateway stopped: it killed its sessions' process groups (and
	// waited for the shell; the background job, orphaned, is init's to
	// reap).
	pids := regexp.MustCompile(`(?:bg|leader)=(\d+)`).FindAllStringSubmatch(started, -1)
	if len(pids) != 2 {
		t.Fatalf("want bg= and leader= in exec's answer:\n%s", started)
	}
	for _, m := range pids {
		pid, _ := strconv.Atoi(m[1])
		waitfor.True(t, m[0]+" to end after the gateway stopped", func() bool { return pidGone(pid) })
	}
}

// pidGone reports whether pid ended: no such process, or a zombie left for
// init to reap.
func pidGone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}
