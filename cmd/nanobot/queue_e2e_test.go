package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/nanobot-go/nanobot/channels/web"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestKill9InEachQueueModeLosesNothing: in every queue mode, two messages
// written while the first turn runs, the gateway killed with SIGKILL, then
// started again: both messages reach the session exactly once and are
// answered.
func TestKill9InEachQueueModeLosesNothing(t *testing.T) {
	bin := binary(t)
	for _, mode := range []string{"queue", "steer", "collect", "interrupt"} {
		t.Run(mode, func(t *testing.T) {
			srv := providertest.New(t)
			var fast atomic.Bool
			srv.Handle(func(providertest.Request) providertest.Reply {
				if fast.Load() {
					return providertest.Reply{Text: "Answered."}
				}
				return providertest.Reply{Text: "too late", Delay: 60 * time.Second}
			})
			port := freePort(t)
			dir := t.TempDir()
			cfg := filepath.Join(dir, "config.json")
			body := fmt.Sprintf(`{
			  "agents": {"defaults": {"model": "test-model", "provider": "vllm", "queue": {"mode": %q, "collectMs": 200}}},
			  "providers": {"vllm": {"apiBase": %q}},
			  "gateway": {"port": %d, "heartbeat": {"enabled": false}}
			}`, mode, srv.OpenAIBase(), port)
			if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}

			first := startBinaryGateway(t, bin, cfg, port)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			ws, _, err := websocket.Dial(ctx, fmt.Sprintf("ws://127.0.0.1:%d/ws", port), nil)
			if err != nil {
				t.Fatal(err)
			}
			const chat = "queue-crash-chat"
			if err := wsjson.Write(ctx, ws, web.Frame{Type: "auth", Chat: chat, Token: instanceToken(t, cfg)}); err != nil {
				t.Fatal(err)
			}
			var hello web.Frame
			if err := wsjson.Read(ctx, ws, &hello); err != nil {
				t.Fatal(err)
			}
			if err := wsjson.Write(ctx, ws, web.Frame{Type: "message", Text: "first line"}); err != nil {
				t.Fatal(err)
			}
			journal := filepath.Join(dir, "state", "inbox.jsonl")
			waitFile(t, journal, func(s string) bool { return strings.Contains(s, "first line") })
			if mode != "collect" {
				// Let the first turn start, so the second arrives during it.
				if got := srv.WaitRequests(1, 15*time.Second); len(got) != 1 {
					t.Fatalf("the LLM was not called (%d requests)", len(got))
				}
			}
			if err := wsjson.Write(ctx, ws, web.Frame{Type: "message", Text: "second line"}); err != nil {
				t.Fatal(err)
			}
			waitFile(t, journal, func(s string) bool { return strings.Contains(s, "second line") })
			if got := srv.WaitRequests(1, 15*time.Second); len(got) < 1 {
				t.Fatal("no turn was running when the gateway was to be killed")
			}
			if err := first.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_, _ = first.Process.Wait()
			ws.CloseNow()

			fast.Store(true)
			startBinaryGateway(t, bin, cfg, port)
			sessFile := filepath.Join(dir, "sessions", "web%3A"+chat+".jsonl")
			got := waitFile(t, sessFile, func(s string) bool {
				i := strings.LastIndex(s, "second line")
				return i >= 0 && strings.Contains(s[i:], "Answered.")
			})
			for _, want := range []string{"first line", "second line"} {
				if n := strings.Count(got, want); n != 1 {
					t.Errorf("%q is in the session %d times, want once:\n%s", want, n, got)
				}
			}
		})
	}
}

// waitFile polls path until its content satisfies ok, and returns it.
func waitFile(t *testing.T, path string, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if ok(string(b)) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never reached the expected state:\n%s", path, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
