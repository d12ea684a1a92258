package backends_test

import (
	"testing"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestLocalModelToolCallsAsText: a local server that passes a model's
// tool call through as text (its template did not parse it) gives a real
// tool call, streamed or not, unless textToolCalls is off for it.
func TestLocalModelToolCallsAsText(t *testing.T) {
	srv := providertest.New(t)
	call := "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.md\"}}\n</tool_call>"
	req := providers.ChatRequest{
		Messages: []providers.Message{{Role: "user", Content: "what is in notes.md?"}},
		Tools:    []providers.ToolDefinition{{Name: "read_file", Parameters: map[string]any{"type": "object"}}},
	}
	for _, off := range []bool{false, true} {
		res, err := providers.Resolve("ollama/qwen3", "", map[string]providers.Settings{"ollama": {APIBase: srv.OpenAIBase(), NoTextToolCalls: off}})
		if err != nil {
			t.Fatal(err)
		}
		p, err := providers.New(res, options(srv))
		if err != nil {
			t.Fatal(err)
		}
		srv.Push(providertest.Reply{Text: call}, providertest.Reply{Text: call})
		chat, err := p.Chat(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		var shown string
		streamed, err := p.Stream(t.Context(), req, func(d providers.Delta) { shown += d.Content })
		if err != nil {
			t.Fatal(err)
		}
		for _, resp := range []*providers.LLMResponse{chat, streamed} {
			converted := len(resp.ToolCalls) == 1 && resp.ToolCalls[0].Name == "read_file" && resp.ToolCalls[0].Arguments["path"] == "notes.md" && resp.Content == ""
			if converted == off {
				t.Errorf("textToolCalls off=%v: calls %+v, content %q", off, resp.ToolCalls, resp.Content)
			}
		}
		if want := map[bool]string{false: "", true: call}[off]; shown != want {
			t.Errorf("textToolCalls off=%v: the user was shown %q, want %q", off, shown, want)
		}
	}
}
