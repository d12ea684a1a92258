package agent

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

// Responses API reasoning items reach the next call of the turn on the
// assistant message, survive a session reload, and every call carries the
// session key as its cache key.
func TestReasoningItemsCarriedAndStored(t *testing.T) {
	items := []providers.ReasoningItem{{ID: "rs_1", EncryptedContent: "enc", Summary: []string{"think"}}}
	llm := &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		if len(req.Messages) > 0 && req.Messages[len(req.Messages)-1].Role == providers.RoleTool {
			return text("done")
		}
		return &providers.LLMResponse{FinishReason: providers.FinishToolCalls, ReasoningItems: items,
			ToolCalls: []providers.ToolCallRequest{call("c1", "echo", map[string]any{})}}, nil
	}}
	echo := toolFunc{name: "echo", fn: func(context.Context, map[string]any) (tools.Result, error) { return tools.Result{Content: "ok"}, nil }}
	h := newHarness(t, llm, toolList{echo}, nil)
	if got := h.ask(t, bus.Inbound{Channel: "test", ChatID: "c1", Content: "go"}); got != "done" {
		t.Fatalf("answer %q", got)
	}
	reqs := llm.reqs()
	if len(reqs) != 2 {
		t.Fatalf("%d calls, want 2", len(reqs))
	}
	for i, r := range reqs {
		if r.CacheKey != "test:c1" {
			t.Errorf("call %d CacheKey = %q, want the session key", i, r.CacheKey)
		}
	}
	var sent []providers.ReasoningItem
	for _, m := range reqs[1].Messages {
		if m.Role == providers.RoleAssistant {
			sent = m.ReasoningItems
		}
	}
	if diff := cmp.Diff(items, sent); diff != "" {
		t.Errorf("reasoning items on the second call (-want +got):\n%s", diff)
	}
	store, err := session.NewFileStore(h.ws+"/sessions", session.FileStoreOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.Load(context.Background(), "test:c1")
	if err != nil {
		t.Fatal(err)
	}
	var stored []providers.ReasoningItem
	for _, m := range s.Messages {
		if m.Role == providers.RoleAssistant && len(m.ReasoningItems) > 0 {
			stored = m.ReasoningItems
		}
	}
	if diff := cmp.Diff(items, stored); diff != "" {
		t.Errorf("stored reasoning items after reload (-want +got):\n%s", diff)
	}
}
