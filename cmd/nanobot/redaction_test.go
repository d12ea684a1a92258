package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"net/http"
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

// TestSecretsNeverLeak runs the real binary with an API key (from the
// environment, as users set it) and a Telegram token, drives a conversation
// in which the provider echoes the key back in its errors and the agent runs
// `env`, then reads every log line, every file the instance wrote and every
// message the bot sent: neither secret appears anywhere but config.json.
func TestSecretsNeverLeak(t *testing.T) {
	bin := binary(t)
	const apiKey = "sk-test-LEAKCANARY-7d1f0c9b2e4a"
	// An MCP server whose URL carries its key (as Azure Functions'
	// ?code= does), and that is down: its connection errors name the URL.
	const mcpCode = "MCPCODE-canary-51f0"
	secrets := []string{apiKey, telegramtest.Token, mcpCode}

	llm := providertest.New(t)
	keyInBody := fmt.Sprintf(`{"error":{"message":"Incorrect API key provided: %s. You can find your API key at https://example.invalid","type":"invalid_request_error","code":"invalid_api_key"}}`, apiKey)
	llm.Push(
		providertest.Reply{Status: 401, Body: keyInBody},
		providertest.Reply{ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "exec", Arguments: `{"command":"env; echo key=$OPENAI_API_KEY token=$NANOBOT_TG_TOKEN"}`}}},
		providertest.Reply{Text: "Environment listed."},
		providertest.Reply{Status: 400, Body: keyInBody},
	)
	tg := telegramtest.New(t)

	dir := t.TempDir()
	port := freePort(t)
	cfg := filepath.Join(dir, "config.json")
	body := fmt.Sprintf(`{
	  "agents": {"defaults": {"model": "test-model", "provider": "vllm"}},
	  "providers": {"vllm": {"apiBase": %q, "apiKey": "${OPENAI_API_KEY}"}},
	  "channels": {"telegram": {"enabled": true, "token": "${NANOBOT_TG_TOKEN}", "apiBase": %q, "allowFrom": ["*"]}},
	  "tools": {"mcpServers": {"fn": {"url": "http://127.0.0.1:%d/mcp?code=%s"}}},
	  "gateway": {"port": %d, "heartbeat": {"enabled": false}},
	  "log": {"level": "debug"}
	}`, llm.OpenAIBase(), tg.URL, freePort(t), mcpCode, port)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(bin, "gateway", "--config", cfg)
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY="+apiKey, "NANOBOT_TG_TOKEN="+telegramtest.Token, "HOME="+dir)
	var logs syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stopGateway := func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { _, _ = cmd.Process.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		}
	}
	t.Cleanup(stopGateway)

	user := telegramtest.User{ID: 4242, Username: "ann", FirstName: "Ann"}
	chat := telegramtest.Chat{ID: user.ID, Type: "private"}
	say := func(text string, want func(string) bool) {
		t.Helper()
		from := len(tg.Sent())
		tg.Send(telegramtest.Msg{From: user, Chat: chat, Text: text})
		deadline := time.Now().Add(30 * time.Second)
		for {
			for _, s := range tg.Sent()[from:] {
				if want(s.Visible) {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no reply to %q; logs:\n%s", text, logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	anyReply := func(string) bool { return true }
	say("hello", anyReply)
	say("list the environment", func(s string) bool { return strings.Contains(s, "Environment listed.") })
	say("once more", anyReply)
	if n := len(llm.Requests()); n != 4 {
		t.Fatalf("%d provider requests, want 4", n)
	}
	// /api/status answers anyone who can reach the port: the MCP server's
	// failure is there, its key is not.
	var status []byte
	waitfor.True(t, "the MCP server's failure in /api/status", func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/status", port))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		status, _ = io.ReadAll(resp.Body)
		return bytes.Contains(status, []byte(`"lastError":"connect`))
	})
	// The exec result went back to the model: it must not have carried
	// the secrets either.
	last := llm.Requests()[2]
	raw := last.Raw
	if !bytes.Contains(raw, []byte("key= token=")) {
		t.Errorf("exec ran without showing its output to the model; request:\n%s", raw)
	}
	stopGateway()

	check := func(where string, data []byte) {
		for _, s := range secrets {
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%s contains the secret %.8s…", where, s)
			}
		}
	}
	check("the gateway's log", []byte(logs.String()))
	check("/api/status", status)
	// The provider's error text (with the key cut out) reached the log, so
	// the redaction was exercised, not bypassed.
	if !strings.Contains(logs.String(), "Incorrect API key provided") {
		t.Errorf("the provider's error never reached the log; logs:\n%s", logs.String())
	}
	for _, s := range tg.Sent() {
		check("a message the bot sent", []byte(s.Text))
	}
	for i, r := range llm.Requests() {
		raw := r.Raw
		check(fmt.Sprintf("provider request %d", i), raw)
	}
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path == cfg {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		data, err := io.ReadAll(f)
		if err != nil {
			return err
		}
		files++
		check(path, data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 3 {
		t.Fatalf("only %d files written; the walk looked in the wrong place", files)
	}
	if !strings.Contains(logs.String(), "level=DEBUG") && !strings.Contains(logs.String(), `"level":"DEBUG"`) {
		t.Errorf("debug logging was not on; the check proves less than it claims")
	}
}
