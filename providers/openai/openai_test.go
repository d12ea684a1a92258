package openai_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/openai"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

const testKey = "sk-test-0123456789"

func newProvider(t *testing.T, srv *providertest.Server, mod ...func(*openai.Options)) *openai.Provider {
	t.Helper()
	opts := openai.Options{Endpoint: providers.Endpoint{Name: "testai", APIKey: testKey, APIBase: srv.OpenAIBase(), HTTPClient: srv.Client()}}
	for _, m := range mod {
		m(&opts)
	}
	p, err := openai.New(opts)
	if err != nil {
		t.Fatalf("openai.New: %v", err)
	}
	return p
}

func userReq(text string) providers.ChatRequest {
	return providers.ChatRequest{Model: "test-model", Messages: []providers.Message{
		{Role: providers.RoleSystem, Content: "be brief"},
		{Role: providers.RoleUser, Content: text},
	}}
}

func TestChatText(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "hello there", Usage: &providertest.Usage{PromptTokens: 12, CompletionTokens: 3, CacheReadTokens: 8}})
	p := newProvider(t, srv)

	resp, err := p.Chat(t.Context(), userReq("hi"))
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	want := &providers.LLMResponse{
		Content: "hello there", FinishReason: providers.FinishStop, Model: "test-model",
		Usage: providers.Usage{PromptTokens: 12, CompletionTokens: 3, TotalTokens: 15, CacheReadTokens: 8},
	}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q", got)
	}
	wantMsgs := []map[string]any{
		{"role": "system", "content": "be brief"},
		{"role": "user", "content": "hi"},
	}
	if diff := cmp.Diff(wantMsgs, reqs[0].Messages()); diff != "" {
		t.Errorf("sent messages (-want +got):\n%s", diff)
	}
	if reqs[0].Stream {
		t.Error("Chat sent stream: true")
	}
}

func TestChatToolCalls(t *testing.T) {
	tests := []struct {
		name  string
		calls []providertest.ToolCall
		want  []providers.ToolCallRequest
	}{
		{
			name:  "one",
			calls: []providertest.ToolCall{{ID: "call_a", Name: "read_file", Arguments: `{"path":"a.txt"}`}},
			want: []providers.ToolCallRequest{{ID: "call_a", Name: "read_file",
				Arguments: map[string]any{"path": "a.txt"}, RawArguments: `{"path":"a.txt"}`}},
		},
		{
			name: "several",
			calls: []providertest.ToolCall{
				{ID: "call_a", Name: "read_file", Arguments: `{"path":"a.txt"}`},
				{ID: "call_b", Name: "exec", Arguments: `{"command":"ls -l","timeout":5}`},
				{ID: "call_c", Name: "list_dir", Arguments: ``},
			},
			want: []providers.ToolCallRequest{
				{ID: "call_a", Name: "read_file", Arguments: map[string]any{"path": "a.txt"}, RawArguments: `{"path":"a.txt"}`},
				{ID: "call_b", Name: "exec", Arguments: map[string]any{"command": "ls -l", "timeout": 5.0}, RawArguments: `{"command":"ls -l","timeout":5}`},
				{ID: "call_c", Name: "list_dir", Arguments: map[string]any{}, RawArguments: `{}`},
			},
		},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			name := tt.name + map[bool]string{false: "/chat", true: "/stream"}[stream]
			t.Run(name, func(t *testing.T) {
				srv := providertest.New(t)
				srv.Push(providertest.Reply{ToolCalls: tt.calls, Chunks: 4})
				p := newProvider(t, srv)
				var resp *providers.LLMResponse
				var err error
				if stream {
					resp, err = p.Stream(t.Context(), userReq("go"), func(providers.Delta) {})
				} else {
					resp, err = p.Chat(t.Context(), userReq("go"))
				}
				if err != nil {
					t.Fatalf("call: %v", err)
				}
				if diff := cmp.Diff(tt.want, resp.ToolCalls); diff != "" {
					t.Errorf("tool calls (-want +got):\n%s", diff)
				}
				if resp.FinishReason != providers.FinishToolCalls {
					t.Errorf("finish = %q, want tool_calls", resp.FinishReason)
				}
			})
		}
	}
}

func TestStreamDeltasInOrder(t *testing.T) {
	srv := providertest.New(t)
	text := "Streaming answers arrive in pieces, in order."
	srv.Push(providertest.Reply{Text: text, Chunks: 5, Usage: &providertest.Usage{PromptTokens: 40, CompletionTokens: 9, CacheReadTokens: 32, CacheWriteTokens: 4}})
	p := newProvider(t, srv)

	var deltas []string
	resp, err := p.Stream(t.Context(), userReq("stream please"), func(d providers.Delta) {
		deltas = append(deltas, d.Content)
	})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if len(deltas) != 5 {
		t.Errorf("got %d deltas, want 5: %q", len(deltas), deltas)
	}
	if got := strings.Join(deltas, ""); got != text {
		t.Errorf("joined deltas = %q, want %q", got, text)
	}
	if resp.Content != text {
		t.Errorf("content = %q", resp.Content)
	}
	wantUsage := providers.Usage{PromptTokens: 40, CompletionTokens: 9, TotalTokens: 49, CacheReadTokens: 32, CacheWriteTokens: 4}
	if diff := cmp.Diff(wantUsage, resp.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	req := srv.Requests()[0]
	if !req.Stream {
		t.Error("stream flag not sent")
	}
	if diff := cmp.Diff(map[string]any{"include_usage": true}, req.Body["stream_options"]); diff != "" {
		t.Errorf("stream_options (-want +got):\n%s", diff)
	}
}

func TestReasoningContentRoundTrip(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "chat", true: "stream"}[stream], func(t *testing.T) {
			srv := providertest.New(t)
			srv.Push(
				providertest.Reply{Reasoning: "the user wants a file listing", ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "ls", Arguments: `{}`}}},
				providertest.Reply{Text: "done"},
			)
			p := newProvider(t, srv)
			req := userReq("list files")
			var reasoningDeltas strings.Builder
			call := func(req providers.ChatRequest) *providers.LLMResponse {
				t.Helper()
				var resp *providers.LLMResponse
				var err error
				if stream {
					resp, err = p.Stream(t.Context(), req, func(d providers.Delta) { reasoningDeltas.WriteString(d.Reasoning) })
				} else {
					resp, err = p.Chat(t.Context(), req)
				}
				if err != nil {
					t.Fatalf("call: %v", err)
				}
				return resp
			}
			first := call(req)
			if first.ReasoningContent != "the user wants a file listing" {
				t.Fatalf("reasoning = %q", first.ReasoningContent)
			}
			if stream && reasoningDeltas.String() != first.ReasoningContent {
				t.Errorf("reasoning deltas = %q", reasoningDeltas.String())
			}
			// Replay: the assistant turn goes back with its reasoning.
			req.Messages = append(req.Messages,
				providers.Message{Role: providers.RoleAssistant, ReasoningContent: first.ReasoningContent,
					ToolCalls: []providers.ToolCall{{ID: "c1", Type: "function", Function: providers.FunctionCall{Name: "ls", Arguments: "{}"}}}},
				providers.Message{Role: providers.RoleTool, ToolCallID: "c1", Content: "a.txt"},
			)
			call(req)
			sent := srv.Requests()[1].Messages()
			want := map[string]any{
				"role": "assistant", "reasoning_content": "the user wants a file listing",
				"tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "ls", "arguments": "{}"}}},
			}
			if diff := cmp.Diff(want, sent[2]); diff != "" {
				t.Errorf("replayed assistant message (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]any{"role": "tool", "tool_call_id": "c1", "content": "a.txt"}, sent[3]); diff != "" {
				t.Errorf("tool result message (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNoReasoningReplay(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "ok"})
	p := newProvider(t, srv, func(o *openai.Options) { o.NoReasoningReplay = true })
	req := userReq("again")
	req.Messages = append(req.Messages, providers.Message{Role: providers.RoleAssistant, Content: "prev", ReasoningContent: "secret thoughts"})
	if _, err := p.Chat(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if _, ok := srv.Requests()[0].Messages()[2]["reasoning_content"]; ok {
		t.Error("reasoning_content sent despite NoReasoningReplay")
	}
}

func TestImageMessage(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "a cat"})
	p := newProvider(t, srv)
	img := "data:image/png;base64,iVBORw0KGgo="
	req := providers.ChatRequest{Model: "vision", Messages: []providers.Message{{
		Role: providers.RoleUser, Parts: []providers.ContentPart{providers.TextPart("what is this?"), providers.ImagePart(img)},
	}}}
	if _, err := p.Chat(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	want := []any{
		map[string]any{"type": "text", "text": "what is this?"},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": img}},
	}
	if diff := cmp.Diff(want, srv.Requests()[0].Messages()[0]["content"]); diff != "" {
		t.Errorf("content parts (-want +got):\n%s", diff)
	}
}

func TestRequestParameters(t *testing.T) {
	temp := 0.3
	tools := []providers.ToolDefinition{{
		Name: "read_file", Description: "Read a file",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string", "format": "uri"}}, "additionalProperties": false},
	}}
	tests := []struct {
		name   string
		opts   func(*openai.Options)
		req    func(*providers.ChatRequest)
		checks map[string]any // body key -> want (nil: absent)
	}{
		{
			name: "max tokens, temperature, effort",
			req: func(r *providers.ChatRequest) {
				r.MaxTokens, r.Temperature, r.ReasoningEffort = 256, &temp, "High"
			},
			checks: map[string]any{"max_tokens": 256.0, "temperature": 0.3, "reasoning_effort": "high", "max_completion_tokens": nil, "tools": nil, "tool_choice": nil},
		},
		{
			name:   "max_completion_tokens",
			opts:   func(o *openai.Options) { o.MaxCompletionTokens = true },
			req:    func(r *providers.ChatRequest) { r.MaxTokens = 100 },
			checks: map[string]any{"max_completion_tokens": 100.0, "max_tokens": nil},
		},
		{
			name:   "tools, auto choice omitted",
			req:    func(r *providers.ChatRequest) { r.Tools = tools },
			checks: map[string]any{"tool_choice": nil},
		},
		{
			name:   "tool choice none",
			req:    func(r *providers.ChatRequest) { r.Tools, r.ToolChoice = tools, "none" },
			checks: map[string]any{"tool_choice": "none"},
		},
		{
			name:   "tool choice required",
			req:    func(r *providers.ChatRequest) { r.Tools, r.ToolChoice = tools, "required" },
			checks: map[string]any{"tool_choice": "required"},
		},
		{
			name:   "named tool",
			req:    func(r *providers.ChatRequest) { r.Tools, r.ToolChoice = tools, "read_file" },
			checks: map[string]any{"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "read_file"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.New(t)
			srv.Push(providertest.Reply{Text: "ok"})
			var mods []func(*openai.Options)
			if tt.opts != nil {
				mods = append(mods, tt.opts)
			}
			p := newProvider(t, srv, mods...)
			req := userReq("x")
			tt.req(&req)
			if _, err := p.Chat(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			body := srv.Requests()[0].Body
			for key, want := range tt.checks {
				got, ok := body[key]
				if want == nil {
					if ok {
						t.Errorf("%s = %v, want absent", key, got)
					}
					continue
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", key, diff)
				}
			}
		})
	}
}

func TestToolSchemaSentNormalized(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "ok"})
	p := newProvider(t, srv, func(o *openai.Options) { o.SchemaDialect = providers.DialectGemini })
	req := userReq("x")
	params := map[string]any{"type": "object", "additionalProperties": false,
		"properties": map[string]any{"when": map[string]any{"type": "string", "format": "date-time"}, "url": map[string]any{"type": "string", "format": "uri"}}}
	req.Tools = []providers.ToolDefinition{{Name: "t", Description: "d", Parameters: params}}
	if _, err := p.Chat(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	want := []any{map[string]any{"type": "function", "function": map[string]any{
		"name": "t", "description": "d",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{
			"when": map[string]any{"type": "string", "format": "date-time"},
			"url":  map[string]any{"type": "string"},
		}},
	}}}
	if diff := cmp.Diff(want, srv.Requests()[0].Body["tools"]); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if _, ok := params["additionalProperties"]; !ok {
		t.Error("caller's schema was modified")
	}
}

func TestBrokenToolArguments(t *testing.T) {
	tests := []struct {
		name     string
		args     string
		want     map[string]any
		wantErrs bool
	}{
		{name: "trailing comma", args: `{"path": "a.txt",}`, want: map[string]any{"path": "a.txt"}},
		{name: "unclosed brace", args: `{"path": "a.txt"`, want: map[string]any{"path": "a.txt"}},
		{name: "unclosed string", args: `{"path": "a.t`, want: map[string]any{"path": "a.t"}},
		{name: "code fence", args: "```json\n{\"path\": \"a.txt\"}\n```", want: map[string]any{"path": "a.txt"}},
		{name: "empty", args: ``, want: map[string]any{}},
		{name: "hopeless", args: `path=a.txt`, wantErrs: true},
		{name: "array", args: `["a"]`, wantErrs: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.New(t)
			srv.Push(providertest.Reply{ToolCalls: []providertest.ToolCall{{ID: "c", Name: "read_file", Arguments: tt.args}}})
			p := newProvider(t, srv)
			resp, err := p.Stream(t.Context(), userReq("x"), nil)
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			tc := resp.ToolCalls[0]
			if tt.wantErrs {
				if tc.ArgumentsError == "" {
					t.Errorf("ArgumentsError empty, arguments %v", tc.Arguments)
				}
				if tc.Arguments == nil {
					t.Error("Arguments is nil; want an empty map")
				}
				return
			}
			if tc.ArgumentsError != "" {
				t.Errorf("ArgumentsError = %q", tc.ArgumentsError)
			}
			if diff := cmp.Diff(tt.want, tc.Arguments); diff != "" {
				t.Errorf("arguments (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExtraHeaders(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "ok"})
	p := newProvider(t, srv, func(o *openai.Options) {
		o.ExtraHeaders = map[string]string{"HTTP-Referer": "https://nanobot.example", "X-Title": "nanobot"}
	})
	if _, err := p.Chat(t.Context(), userReq("x")); err != nil {
		t.Fatal(err)
	}
	h := srv.Requests()[0].Header
	if h.Get("HTTP-Referer") != "https://nanobot.example" || h.Get("X-Title") != "nanobot" {
		t.Errorf("extra headers missing: %v", h)
	}
}

func TestAzure(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "from azure"})
	p := newProvider(t, srv, func(o *openai.Options) {
		o.APIBase = srv.URL
		o.AzureAPIVersion = "2024-10-21"
		o.HTTPClient = &http.Client{}
	})
	resp, err := p.Chat(t.Context(), providers.ChatRequest{Model: "my-deployment", Messages: []providers.Message{{Role: "user", Content: "hi"}}})
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if resp.Content != "from azure" {
		t.Errorf("content = %q", resp.Content)
	}
	req := srv.Requests()[0]
	if req.Path != "/openai/deployments/my-deployment/chat/completions" || req.Query != "api-version=2024-10-21" {
		t.Errorf("request went to %s?%s", req.Path, req.Query)
	}
	if req.Header.Get("Api-Key") != testKey || req.Header.Get("Authorization") != "" {
		t.Errorf("auth headers: api-key %q authorization %q", req.Header.Get("Api-Key"), req.Header.Get("Authorization"))
	}
}

func TestNoAPIKeyForLocalServers(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "local"})
	p := newProvider(t, srv, func(o *openai.Options) { o.APIKey = "" })
	if _, err := p.Chat(t.Context(), userReq("x")); err != nil {
		t.Fatal(err)
	}
	if h := srv.Requests()[0].Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization = %q, want none", h)
	}
}

func TestInvalidRequest(t *testing.T) {
	srv := providertest.New(t)
	p := newProvider(t, srv)
	_, err := p.Chat(t.Context(), providers.ChatRequest{Model: "m", Messages: []providers.Message{{Role: "wizard", Content: "x"}}})
	if err == nil || providers.IsTransient(err) {
		t.Fatalf("err = %v, want a permanent error", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent for an invalid request", n)
	}
}
