package heartbeat

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nanobot-go/nanobot/agent/templates"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/providers"
)

// decider answers every call with a heartbeat tool call.
type decider struct {
	calls  atomic.Int32
	action string
	last   providers.ChatRequest
}

func (d *decider) Chat(_ context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
	d.calls.Add(1)
	d.last = req
	return &providers.LLMResponse{ToolCalls: []providers.ToolCallRequest{{ID: "1", Name: "heartbeat", Arguments: map[string]any{"action": d.action, "tasks": "send the weather"}}}, FinishReason: "tool_calls"}, nil
}

func (d *decider) Stream(ctx context.Context, req providers.ChatRequest, _ func(providers.Delta)) (*providers.LLMResponse, error) {
	return d.Chat(ctx, req)
}

func TestTemplateIsNotActionable(t *testing.T) {
	ws := t.TempDir()
	if _, err := templates.Sync(ws); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(ws, "HEARTBEAT.md"))
	if got := Actionable(string(b)); got != "" {
		t.Errorf("the shipped template is actionable: %q", got)
	}
	if got := Actionable("# H\n\n- [ ] \n- \n<!-- - hidden -->\n- water the plants\n"); got != "- water the plants" {
		t.Errorf("Actionable = %q", got)
	}
}

func TestBeat(t *testing.T) {
	ws := t.TempDir()
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(ws, "HEARTBEAT.md"), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var published []bus.Inbound
	llm := &decider{action: "skip"}
	target := func() (string, string, bool) { return "telegram", "42", true }
	svc := New(Config{Workspace: ws, Provider: llm, Model: "m", Target: target, Publish: func(_ context.Context, m bus.Inbound) error {
		published = append(published, m)
		return nil
	}})
	ctx := context.Background()

	// Missing and empty files: no LLM call at all.
	for _, content := range []string{"", "# Heartbeat\n\n<!-- nothing -->\n## Tasks\n- \n"} {
		if content != "" {
			write(content)
		}
		if d, err := svc.Beat(ctx); err != nil || d != "empty" {
			t.Errorf("decision %q %v", d, err)
		}
	}
	if llm.calls.Load() != 0 {
		t.Fatalf("empty heartbeat called the LLM %d times", llm.calls.Load())
	}

	write("## Tasks\n- every morning send the weather\n")
	if d, _ := svc.Beat(ctx); d != "skip" || len(published) != 0 {
		t.Errorf("skip: decision %q, published %v", d, published)
	}
	if llm.last.ToolChoice != "heartbeat" || !strings.Contains(llm.last.Messages[1].Content, "send the weather") {
		t.Errorf("decision request: %+v", llm.last)
	}
	llm.action = "run"
	if d, _ := svc.Beat(ctx); d != "run" || len(published) != 1 {
		t.Fatalf("run: decision %q, published %v", d, published)
	}
	m := published[0]
	if m.Key() != SessionKey || m.ChatID != "42" || !m.Background || m.Source != bus.SourceHeartbeat || !strings.Contains(m.Content, bus.SilentReply) {
		t.Errorf("published %+v", m)
	}
}
