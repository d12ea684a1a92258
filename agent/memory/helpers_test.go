package memory

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/providers"
)

// fakeProvider answers Chat with a scripted function and records requests.
type fakeProvider struct {
	mu    sync.Mutex
	reqs  []providers.ChatRequest
	reply func(ctx context.Context, req providers.ChatRequest) (*providers.LLMResponse, error)
}

func (f *fakeProvider) Chat(ctx context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	return f.reply(ctx, req)
}

func (f *fakeProvider) Stream(ctx context.Context, req providers.ChatRequest, _ func(providers.Delta)) (*providers.LLMResponse, error) {
	return f.Chat(ctx, req)
}

func (f *fakeProvider) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

func (f *fakeProvider) requests() []providers.ChatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]providers.ChatRequest(nil), f.reqs...)
}

// saveCall is a response with one save_memory call.
func saveCall(history, memory string) *providers.LLMResponse {
	return &providers.LLMResponse{
		FinishReason: providers.FinishToolCalls,
		ToolCalls: []providers.ToolCallRequest{{
			ID: "call_1", Name: saveMemoryTool,
			Arguments: map[string]any{"history_entry": history, "memory_update": memory},
		}},
	}
}

// requestMemory extracts the current MEMORY.md from a consolidation request.
func requestMemory(t testing.TB, req providers.ChatRequest) string {
	t.Helper()
	u := req.Messages[len(req.Messages)-1].Content
	const head = "## Current MEMORY.md\n\n"
	i := strings.Index(u, head)
	if i < 0 {
		t.Fatalf("request has no current memory: %q", u)
	}
	rest := u[i+len(head):]
	for _, stop := range []string{"\nMEMORY.md has grown", "\n## Conversation to consolidate"} {
		if j := strings.Index(rest, stop); j >= 0 {
			rest = rest[:j]
		}
	}
	if rest == "(empty)\n" {
		return ""
	}
	return rest
}

// requestConversation extracts the conversation part of a request.
func requestConversation(req providers.ChatRequest) string {
	u := req.Messages[len(req.Messages)-1].Content
	_, conv, _ := strings.Cut(u, "## Conversation to consolidate\n\n")
	return conv
}

// appendingReply adds one "## Round N" section to whatever memory it is given.
func appendingReply(t testing.TB, label string) func(context.Context, providers.ChatRequest) (*providers.LLMResponse, error) {
	var mu sync.Mutex
	n := 0
	return func(_ context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
		mu.Lock()
		n++
		round := n
		mu.Unlock()
		mem := requestMemory(t, req)
		mem = strings.TrimRight(mem, "\n") + fmt.Sprintf("\n\n## %s round %d\n- learned fact %s-%d\n", label, round, label, round)
		return saveCall(fmt.Sprintf("[2026-03-01 10:00] %s round %d summary.", label, round), strings.TrimLeft(mem, "\n")), nil
	}
}

// recordingStore wraps a store and records every cursor it is asked to set.
type recordingStore struct {
	session.Store
	mu      sync.Mutex
	cursors []int
}

func (r *recordingStore) SetCursor(ctx context.Context, s *session.Session, n int) error {
	r.mu.Lock()
	r.cursors = append(r.cursors, n)
	r.mu.Unlock()
	return r.Store.SetCursor(ctx, s, n)
}

func newStore(t testing.TB, dir string) *session.FileStore {
	t.Helper()
	st, err := session.NewFileStore(dir, session.FileStoreOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// testOptions: budget 4000 tokens (target 2000), a tiny system prompt.
func testOptions(ws string, p providers.Provider, st CursorStore) Options {
	return Options{
		Workspace:           ws,
		Provider:            p,
		Store:               st,
		ContextWindowTokens: 6000,
		MaxTokens:           1000,
		SafetyMargin:        1000,
		OverheadTokens:      100,
		SystemPrompt:        func() string { return "You are a test." },
		Now:                 func() time.Time { return testNow },
		Location:            time.UTC,
	}
}

func newConsolidator(t testing.TB, opts Options) *Consolidator {
	t.Helper()
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// words returns n distinct-looking short words (about n tokens).
func words(tag string, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = []string{"alpha", "beta", "gamma", "delta", "echo", "fox"}[i%6]
	}
	return tag + " " + strings.Join(w, " ")
}

// addTurns appends n turns to s; each is a user message, an assistant tool
// call, its result and the assistant's answer, about 4*size tokens.
func addTurns(t testing.TB, st session.Store, s *session.Session, from, n, size int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		id := fmt.Sprintf("call_%d", i)
		msgs := []providers.Message{
			{Role: providers.RoleUser, Content: words(fmt.Sprintf("user-%d", i), size)},
			{Role: providers.RoleAssistant, ToolCalls: []providers.ToolCall{{ID: id, Type: "function",
				Function: providers.FunctionCall{Name: "exec", Arguments: fmt.Sprintf(`{"command":"echo %d"}`, i)}}}},
			{Role: providers.RoleTool, ToolCallID: id, Name: "exec", Content: words(fmt.Sprintf("result-%d", i), size)},
			{Role: providers.RoleAssistant, Content: words(fmt.Sprintf("answer-%d", i), size)},
		}
		if err := st.Append(context.Background(), s, msgs...); err != nil {
			t.Fatal(err)
		}
	}
}

func load(t testing.TB, st session.Store, key string) *session.Session {
	t.Helper()
	s, err := st.Load(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

func writeMemoryFile(t testing.TB, ws, content string) {
	t.Helper()
	dir := filepath.Join(ws, "memory")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "MEMORY.md"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
