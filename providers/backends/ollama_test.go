package backends_test

import (
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/backends"
	"github.com/nanobot-go/nanobot/providers/ollamatest"
)

// What the scripted model writes after each generation marker of the
// templates (ollamatest.Template): a tool call in each local format, prose that mentions
// the markup, and an answer once a tool result is in.
var localSteps = []ollamatest.Step{
	{After: "<|hermes|>", Say: `<tool_call>{"name":"write_file","arguments":{"path":"hermes.txt","content":"from-hermes"}}</tool_call>`},
	{After: "<|llama|>", Say: `<|python_tag|>{"name":"write_file","parameters":{"path":"llama.txt","content":"from-llama"}}`},
	{After: "<|mistral|>", Say: `[TOOL_CALLS][{"name":"write_file","arguments":{"path":"mistral.txt","content":"from-mistral"}}]`},
	{After: "<|prose|>", Say: `Models-may-write-<tool_call>-to-call-a-tool.`},
	{After: "<|json|>", Say: `An-example:{"path":"a.txt"}`},
	{After: ollamatest.AfterTool, Say: `The-note-is-saved.`},
}

// TestLocalModelServerToolCalls runs nanobot's OpenAI-compatible client
// against a real Ollama serving a scripted GGUF model through llama.cpp:
// tool calls the server passes through as text (Hermes, Llama's
// python_tag, Mistral) become real calls streamed and not, with nothing
// of the markup shown; a call Ollama parses itself arrives as one; prose
// that mentions <tool_call> stays text; textToolCalls off keeps the text.
func TestLocalModelServerToolCalls(t *testing.T) {
	srv := ollamatest.Start(t)
	model := ollamatest.ModelFile(t, localSteps)
	params := map[string]any{"temperature": 0, "num_ctx": 4096}
	for name, tmpl := range map[string]string{
		"hermes-text":   ollamatest.Template("<|hermes|>", false),
		"hermes-parsed": ollamatest.Template("<|hermes|>", true),
		"llama-text":    ollamatest.Template("<|llama|>", false),
		"mistral-text":  ollamatest.Template("<|mistral|>", false),
		"prose":         ollamatest.Template("<|prose|>", false),
		"json":          ollamatest.Template("<|json|>", false),
	} {
		srv.Create(name, model, tmpl, params)
	}

	tools := []providers.ToolDefinition{{Name: "write_file", Parameters: map[string]any{
		"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}, "content": map[string]any{"type": "string"}},
	}}}
	ask := providers.ChatRequest{Messages: []providers.Message{{Role: "user", Content: "save a note"}}, Tools: tools}
	newClient := func(t *testing.T, model string, noText bool) providers.Provider {
		t.Helper()
		res, err := providers.Resolve("ollama/"+model, "", map[string]providers.Settings{"ollama": {APIBase: srv.OpenAIBase(), NoTextToolCalls: noText}})
		if err != nil {
			t.Fatal(err)
		}
		p, err := providers.New(res, providers.Options{Backends: backends.All(), NoRetry: true})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// both asks once without streaming and once streamed, and returns the
	// two answers and the text the user was shown while streaming.
	both := func(t *testing.T, p providers.Provider, req providers.ChatRequest) (chat, streamed *providers.LLMResponse, shown string) {
		t.Helper()
		chat, err := p.Chat(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		streamed, err = p.Stream(t.Context(), req, func(d providers.Delta) { shown += d.Content })
		if err != nil {
			t.Fatal(err)
		}
		return chat, streamed, shown
	}

	for _, c := range []struct{ model, path, content string }{
		{"hermes-text", "hermes.txt", "from-hermes"},
		{"hermes-parsed", "hermes.txt", "from-hermes"},
		{"llama-text", "llama.txt", "from-llama"},
		{"mistral-text", "mistral.txt", "from-mistral"},
	} {
		t.Run(c.model, func(t *testing.T) {
			chat, streamed, shown := both(t, newClient(t, c.model, false), ask)
			for kind, resp := range map[string]*providers.LLMResponse{"chat": chat, "stream": streamed} {
				if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "write_file" ||
					resp.ToolCalls[0].Arguments["path"] != c.path || resp.ToolCalls[0].Arguments["content"] != c.content {
					t.Errorf("%s: tool calls %+v, content %q; want write_file %s", kind, resp.ToolCalls, resp.Content, c.path)
				}
				if strings.TrimSpace(resp.Content) != "" {
					t.Errorf("%s: content %q left beside the call", kind, resp.Content)
				}
			}
			if shown != "" {
				t.Errorf("streaming showed the user %q", shown)
			}
		})
	}

	t.Run("answer after the tool result", func(t *testing.T) {
		first, err := newClient(t, "hermes-text", false).Chat(t.Context(), ask)
		if err != nil || len(first.ToolCalls) != 1 {
			t.Fatalf("first answer: %v, %+v", err, first)
		}
		call := first.ToolCalls[0]
		req := ask
		req.Messages = append(append([]providers.Message(nil), ask.Messages...),
			providers.Message{Role: "assistant", ToolCalls: []providers.ToolCall{{ID: call.ID, Type: "function", Function: providers.FunctionCall{Name: call.Name, Arguments: call.RawArguments}}}},
			providers.Message{Role: "tool", ToolCallID: call.ID, Name: call.Name, Content: "written"})
		chat, streamed, shown := both(t, newClient(t, "hermes-text", false), req)
		for _, resp := range []*providers.LLMResponse{chat, streamed} {
			if len(resp.ToolCalls) != 0 || resp.Content != "The-note-is-saved." {
				t.Errorf("after the tool: calls %+v, content %q", resp.ToolCalls, resp.Content)
			}
		}
		if shown != "The-note-is-saved." {
			t.Errorf("streamed %q", shown)
		}
	})

	t.Run("prose that mentions the markup stays text", func(t *testing.T) {
		const prose = "Models-may-write-<tool_call>-to-call-a-tool."
		chat, streamed, shown := both(t, newClient(t, "prose", false), ask)
		for _, resp := range []*providers.LLMResponse{chat, streamed} {
			if len(resp.ToolCalls) != 0 || resp.Content != prose {
				t.Errorf("calls %+v, content %q; want the prose", resp.ToolCalls, resp.Content)
			}
		}
		if shown != prose {
			t.Errorf("streamed %q, want the prose", shown)
		}
	})

	// Ollama repeats an answer's tail from its first "{" when tools are
	// offered and the template renders no tool calls; the client undoes it.
	t.Run("an answer with JSON in it comes once", func(t *testing.T) {
		const answer = `An-example:{"path":"a.txt"}`
		chat, streamed, shown := both(t, newClient(t, "json", false), ask)
		for _, resp := range []*providers.LLMResponse{chat, streamed} {
			if len(resp.ToolCalls) != 0 || resp.Content != answer {
				t.Errorf("calls %+v, content %q; want %q", resp.ToolCalls, resp.Content, answer)
			}
		}
		if shown != answer {
			t.Errorf("streamed %q, want %q", shown, answer)
		}
	})

	t.Run("textToolCalls off", func(t *testing.T) {
		chat, streamed, shown := both(t, newClient(t, "hermes-text", true), ask)
		for _, resp := range []*providers.LLMResponse{chat, streamed} {
			if len(resp.ToolCalls) != 0 || !strings.HasPrefix(resp.Content, "<tool_call>") {
				t.Errorf("calls %+v, content %q; want the text as the server sent it", resp.ToolCalls, resp.Content)
			}
		}
		if !strings.HasPrefix(shown, "<tool_call>") {
			t.Errorf("streamed %q", shown)
		}
	})
}
