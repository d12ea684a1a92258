package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/internal/syncbuf"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestHooksThroughTelegram runs the gateway binary with two hooks: a
// program (a shell script, through the exec sandbox) that vetoes any
// tool call holding "rm -rf", and an HTTP endpoint that redacts a word
// in every reply. The vetoed call does not run and the model reads why;
// the other call runs; the chat sees the reply redacted.
func TestHooksThroughTelegram(t *testing.T) {
	llm := providertest.New(t)
	llm.Push(
		providertest.Reply{ToolCalls: []providertest.ToolCall{
			{ID: "c1", Name: "exec", Arguments: `{"command":"rm -rf keep"}`},
			{ID: "c2", Name: "exec", Arguments: `{"command":"touch allowed"}`},
		}},
		providertest.Reply{Text: "done; the password is swordfish"},
	)
	redactor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Data struct {
				Text string `json:"text"`
			} `json:"data"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.Header.Get("Authorization") != "Bearer hook-token-1" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"action": "modify", "data": map[string]any{"text": strings.ReplaceAll(req.Data.Text, "swordfish", "[redacted]")}})
	}))
	t.Cleanup(redactor.Close)
	tg := telegramtest.New(t)

	dir := t.TempDir()
	ws := filepath.Join(dir, "workspace")
	if err := os.MkdirAll(filepath.Join(ws, "hooks"), 0o700); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nreq=$(cat)\ncase \"$req\" in\n  *'rm -rf'*) echo '{\"action\":\"veto\",\"reason\":\"no rm -rf here\"}' ;;\n  *) echo '{\"action\":\"continue\"}' ;;\nesac\n"
	if err := os.WriteFile(filepath.Join(ws, "hooks", "guard.sh"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "keep"), []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.json")
	body := fmt.Sprintf(`{
	  "agents": {"defaults": {"model": "test-model", "provider": "vllm"}},
	  "providers": {"vllm": {"apiBase": %q, "apiKey": "k"}},
	  "channels": {"telegram": {"enabled": true, "token": %q, "apiBase": %q, "allowFrom": ["4242|ann"]}},
	  "gateway": {"port": %d, "heartbeat": {"enabled": false}},
	  "hooks": [
	    {"name": "guard", "points": ["before_tool"], "command": ["hooks/guard.sh"], "timeout": "20s", "onFailure": "block"},
	    {"name": "redactor", "points": ["before_reply"], "url": %q, "token": "hook-token-1", "timeout": "10s", "onFailure": "block"}
	  ]
	}`, llm.OpenAIBase(), telegramtest.Token, tg.URL, freePort(t), redactor.URL)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary(t), "gateway", "--config", cfg)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	var logs syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.String())
		}
	})

	ann := telegramtest.User{ID: 4242, Username: "ann", FirstName: "Ann"}
	tg.Send(telegramtest.Msg{From: ann, Chat: telegramtest.Chat{ID: 4242, Type: "private"}, Text: "tidy the workspace"})
	var reply string
	waitfor.Within(t, "the reply", 60*time.Second, func() bool {
		for _, s := range tg.Sent() {
			if strings.Contains(s.Visible, "done;") {
				reply = s.Visible
				return true
			}
		}
		return false
	})
	if !strings.Contains(reply, "the password is [redacted]") {
		t.Errorf("reply %q, want the word redacted by the HTTP hook", reply)
	}
	for _, s := range tg.Sent() {
		if strings.Contains(s.Visible, "swordfish") {
			t.Errorf("the chat saw the word the hook redacts: %q", s.Visible)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "keep")); err != nil {
		t.Error("the vetoed rm -rf ran")
	}
	if _, err := os.Stat(filepath.Join(ws, "allowed")); err != nil {
		t.Error("the call the hook let through did not run")
	}
	reqs := llm.Requests()
	if last := string(reqs[len(reqs)-1].Raw); !strings.Contains(last, "no rm -rf here") {
		t.Errorf("the model was not told of the veto:\n%s", last)
	}

	// `nanobot plugins list` shows both hooks with what they did, never
	// their URL or token.
	out, err := exec.Command(binary(t), "plugins", "list", "--config", cfg).CombinedOutput()
	if err != nil {
		t.Fatalf("plugins list: %v\n%s", err, out)
	}
	for _, want := range []string{"guard  program at before_tool, on failure block  — 2 calls, 0 failures", "redactor  http at before_reply, on failure block  — "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("plugins list lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "hook-token-1") || strings.Contains(string(out), redactor.URL) {
		t.Errorf("plugins list shows a hook's token or URL:\n%s", out)
	}
}
