package gateway

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/fs"
)

// patchThenGrepLLM patches two files with apply_patch, greps for what it
// wrote, and answers with grep's output. It records each tool result.
type patchThenGrepLLM struct {
	mu      sync.Mutex
	results []string
}

func (l *patchThenGrepLLM) Chat(_ context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	last := req.Messages[len(req.Messages)-1]
	if last.Role == providers.RoleTool {
		l.results = append(l.results, last.Content)
	}
	call := func(name string, args map[string]any) (*providers.LLMResponse, error) {
		return &providers.LLMResponse{FinishReason: "tool_calls",
			ToolCalls: []providers.ToolCallRequest{{ID: name, Name: name, Arguments: args}}}, nil
	}
	switch len(l.results) {
	case 0:
		return call("apply_patch", map[string]any{"edits": []any{
			map[string]any{"path": "src/app.go", "action": "replace", "old_text": "return 1", "new_text": "return answer // patched"},
			map[string]any{"path": "notes/todo.md", "action": "add", "new_text": "- ship the patched answer"},
		}})
	case 1:
		return call("grep", map[string]any{"pattern": `patched`, "output_mode": "content"})
	}
	return &providers.LLMResponse{Content: "grep says:\n" + last.Content, FinishReason: "stop"}, nil
}

func (l *patchThenGrepLLM) Stream(ctx context.Context, req providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	r, err := l.Chat(ctx, req)
	if err == nil && r.Content != "" {
		onDelta(providers.Delta{Content: r.Content})
	}
	return r, err
}

// A turn through the gateway in which the model patches two files at once
// and then finds its change with grep, using the real file tools on the
// gateway's workspace.
func TestApplyPatchThenGrepThroughTheGateway(t *testing.T) {
	fc := newFake("fake")
	llm := &patchThenGrepLLM{}
	var ws string
	startGatewayOpts(t, testConfig(map[string][]any{"fake": {"*"}}), llm, func(o *Options) {
		ws = o.Paths.Workspace
		if err := os.MkdirAll(filepath.Join(ws, "src"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "src/app.go"), []byte("package app\n\nfunc Answer() int {\n\treturn 1\n}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		files, err := fs.All(fs.Options{Workspace: ws, RestrictToWorkspace: true})
		if err != nil {
			t.Fatal(err)
		}
		reg := tools.NewRegistry()
		for _, tl := range files {
			if err := reg.Register(tl); err != nil {
				t.Fatal(err)
			}
		}
		o.Tools = reg
	}, fc)
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c1", SenderID: "u1", Content: "patch it", MessageID: "1"}
	want := "grep says:\nnotes/todo.md:1: - ship the patched answer\nsrc/app.go:4: \treturn answer // patched"
	waitfor.True(t, "the answer quoting grep", func() bool {
		got := fc.texts("c1")
		return len(got) > 0 && got[len(got)-1] == want
	})
	llm.mu.Lock()
	patchResult := llm.results[0]
	llm.mu.Unlock()
	if !strings.HasPrefix(patchResult, "Patch applied (2 edits, 2 files).") {
		t.Errorf("apply_patch result = %q", patchResult)
	}
	got, err := os.ReadFile(filepath.Join(ws, "src/app.go"))
	if err != nil || !strings.Contains(string(got), "return answer // patched") {
		t.Errorf("src/app.go = %q, %v", got, err)
	}
}
