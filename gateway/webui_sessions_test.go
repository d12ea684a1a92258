package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nanobot-go/nanobot/providers"
)

// memoryLLM answers memory consolidation requests with a save_memory call
// (and records what they carried); everything else it echoes.
type memoryLLM struct {
	echoLLM
	mu            sync.Mutex
	consolidation []string // the prompt of each consolidation request
}

func (l *memoryLLM) Chat(ctx context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
	if req.ToolChoice != "save_memory" {
		return l.echoLLM.Chat(ctx, req)
	}
	l.mu.Lock()
	l.consolidation = append(l.consolidation, req.Messages[len(req.Messages)-1].Text())
	l.mu.Unlock()
	return &providers.LLMResponse{FinishReason: "tool_calls", ToolCalls: []providers.ToolCallRequest{{
		ID: "call_mem", Name: "save_memory",
		Arguments: map[string]any{"history_entry": "The user asked for a Go add function.", "memory_update": "# Facts\n- the user writes Go\n"},
	}}}, nil
}

func (l *memoryLLM) prompts() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.consolidation...)
}

// workbenchCall makes a loopback API call the way the page does: a
// state change carries the CSRF token of GET /api/me.
func workbenchCall(t *testing.T, base, method, path string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if method != http.MethodGet {
		_, me := workbenchCall(t, base, http.MethodGet, "/api/me")
		req.Header.Set("X-CSRF-Token", me["csrf"].(string))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s %s: %d %q is not JSON", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode, out
}

// TestWorkbenchDeleteConsolidatesFirst: deleting a conversation in the
// workbench takes the /new path: what it said is folded into memory (the
// model is asked, MEMORY.md changes), then the session is archived.
func TestWorkbenchDeleteConsolidatesFirst(t *testing.T) {
	llm := &memoryLLM{}
	var ws string
	r := startGatewayOpts(t, testConfig(nil), llm, func(o *Options) {
		o.Channels = webOnly()
		ws = o.Paths.Workspace
		seedTelegram(t, o.Paths.Sessions)
	})
	base := "http://" + r.addr
	if code, _ := workbenchCall(t, base, http.MethodGet, "/api/sessions/telegram:4242"); code != http.StatusOK {
		t.Fatalf("the seeded conversation: HTTP %d", code)
	}

	code, body := workbenchCall(t, base, http.MethodDelete, "/api/sessions/telegram:4242")
	if code != http.StatusOK || body["archived"] != "telegram:4242" {
		t.Fatalf("delete: HTTP %d %v", code, body)
	}

	prompts := llm.prompts()
	if len(prompts) != 1 || !strings.Contains(prompts[0], "adds two numbers") {
		t.Fatalf("consolidation requests = %q, want one carrying the conversation", prompts)
	}
	mem, err := os.ReadFile(filepath.Join(ws, "memory", "MEMORY.md"))
	if err != nil || !strings.Contains(string(mem), "the user writes Go") {
		t.Fatalf("MEMORY.md = %q (%v), want the consolidated fact", mem, err)
	}
	if code, _ := workbenchCall(t, base, http.MethodGet, "/api/sessions/telegram:4242"); code != http.StatusNotFound {
		t.Errorf("the deleted conversation: HTTP %d, want 404 (archived)", code)
	}
	_, list := workbenchCall(t, base, http.MethodGet, "/api/sessions")
	if n := len(list["sessions"].([]any)); n != 0 {
		t.Errorf("%d conversations listed after the delete, want 0", n)
	}
}
