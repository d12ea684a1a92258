package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/ollamatest"
)

// TestLocalModelToolCallThroughTheGateway: a gateway on a real Ollama
// whose model writes its tool call as Hermes text (the template lets
// Ollama pass it through) runs the tool and answers; an API client that
// streams the reply sees the answer and none of the markup.
func TestLocalModelToolCallThroughTheGateway(t *testing.T) {
	srv := ollamatest.Start(t)
	model := ollamatest.ModelFile(t, []ollamatest.Step{
		{After: "<|hermes|>", Say: `<tool_call>{"name":"write_file","arguments":{"path":"note.txt","content":"from-the-local-model"}}</tool_call>`},
		{After: ollamatest.AfterTool, Say: `The-note-is-saved.`},
	})
	srv.Create("hermes-text", model, ollamatest.Template("<|hermes|>", false), map[string]any{"temperature": 0, "num_ctx": 4096})

	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	port := freePort(t)
	const key = "local-model-e2e-key-0123456789"
	cfg := filepath.Join(dir, "config.json")
	body := fmt.Sprintf(`{
	  "agents": {"defaults": {"model": "ollama/hermes-text", "workspace": %q}},
	  "providers": {"ollama": {"apiBase": %q}},
	  "api": {"apiKey": %q},
	  "gateway": {"port": %d}
	}`, ws, srv.OpenAIBase(), key, port)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	launchGateway(t, cfg)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitfor.Within(t, "the gateway ready (/readyz 200)", 30*time.Second, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions",
		strings.NewReader(`{"stream":true,"messages":[{"role":"user","content":"save a note"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("API: %s", resp.Status)
	}
	var shown, raw strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		raw.WriteString(line + "\n")
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		for _, c := range chunk.Choices {
			shown.WriteString(c.Delta.Content)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if got := shown.String(); !strings.Contains(got, "The-note-is-saved.") || strings.Contains(got, "tool_call") || strings.Contains(got, "write_file") {
		t.Errorf("the API client was sent:\n%s", raw.String())
	}
	if b, err := os.ReadFile(filepath.Join(ws, "note.txt")); err != nil || string(b) != "from-the-local-model" {
		t.Errorf("note.txt: %q, %v; want the content the model's call wrote", b, err)
	}
}
