package anthropic_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/anthropic"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

const testKey = "sk-ant-test-0123456789"

func newProvider(t *testing.T, srv *providertest.Server, mod ...func(*anthropic.Options)) *anthropic.Provider {
	t.Helper()
	opts := anthropic.Options{Endpoint: providers.Endpoint{APIKey: testKey, APIBase: srv.AnthropicBase(), HTTPClient: srv.Client()}}
	for _, m := range mod {
		m(&opts)
	}
	p, err := anthropic.New(opts)
	if err != nil {
		t.Fatalf("anthropic.New: %v", err)
	}
	return p
}

func userReq(text string) providers.ChatRequest {
	return providers.ChatRequest{Model: "claude-test", Messages: []providers.Message{
		{Role: providers.RoleSystem, Content: "You are nanobot."},
		{Role: providers.RoleSystem, Content: "Be brief."},
		{Role: providers.RoleUser, Content: text},
	}}
}

func call(t *testing.T, p *anthropic.Provider, stream bool, req providers.ChatRequest, onDelta func(providers.Delta)) *providers.LLMResponse {
	t.Helper()
	var (
		resp *providers.LLMResponse
		err  error
	)
	if stream {
		resp, err = p.Stream(t.Context(), req, onDelta)
	} else {
		resp, err = p.Chat(t.Context(), req)
	}
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	return resp
}

// failingCall makes a call that must fail with a *providers.Error.
func failingCall(t *testing.T, p *anthropic.Provider, stream bool, onDelta func(providers.Delta)) *providers.Error {
	t.Helper()
	var err error
	if stream {
		_, err = p.Stream(t.Context(), userReq("x"), onDelta)
	} else {
		_, err = p.Chat(t.Context(), userReq("x"))
	}
	var pe *providers.Error
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v (%T), want *providers.Error", err, err)
	}
	return pe
}

var modes = []struct {
	name   string
	stream bool
}{{"chat", false}, {"stream", true}}

func TestText(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv := providertest.New(t)
			srv.Push(providertest.Reply{Text: "Hello from Claude", Usage: &providertest.Usage{
				PromptTokens: 20, CompletionTokens: 7, CacheReadTokens: 100, CacheWriteTokens: 30}})
			p := newProvider(t, srv)
			temp := 0.5
			req := userReq("hi")
			req.Temperature = &temp
			resp := call(t, p, mode.stream, req, nil)

			want := &providers.LLMResponse{
				Content: "Hello from Claude", FinishReason: providers.FinishStop, Model: "claude-test",
				Usage: providers.Usage{PromptTokens: 150, CompletionTokens: 7, TotalTokens: 157, CacheReadTokens: 100, CacheWriteTokens: 30},
			}
			if diff := cmp.Diff(want, resp); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			got := srv.Requests()[0]
			if got.Path != "/v1/messages" || got.Stream != mode.stream {
				t.Errorf("request %s stream=%v", got.Path, got.Stream)
			}
			if h := got.Header.Get("Authorization"); !strings.Contains(h, testKey) {
				t.Errorf("Authorization = %q", h)
			}
			wantSystem := []any{
				map[string]any{"type": "text", "text": "You are nanobot."},
				map[string]any{"type": "text", "text": "Be brief.", "cache_control": map[string]any{"type": "ephemeral"}},
			}
			if diff := cmp.Diff(wantSystem, got.Body["system"]); diff != "" {
				t.Errorf("system (-want +got):\n%s", diff)
			}
			if got.Body["max_tokens"] != float64(anthropic.DefaultMaxTokens) {
				t.Errorf("max_tokens = %v", got.Body["max_tokens"])
			}
			if _, ok := got.Body["temperature"]; ok {
				t.Error("temperature sent")
			}
			wantMsgs := []map[string]any{{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hi"}}}}
			if diff := cmp.Diff(wantMsgs, got.Messages()); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
		})
	}
}

func TestToolCalls(t *testing.T) {
	calls := []providertest.ToolCall{
		{ID: "toolu_1", Name: "read_file", Arguments: `{"path":"notes.md"}`},
		{ID: "toolu_2", Name: "exec", Arguments: `{"command":"date"}`},
	}
	for _, n := range []int{1, 2} {
		for _, mode := range modes {
			t.Run(mode.name+"/"+string(rune('0'+n)), func(t *testing.T) {
				srv := providertest.New(t)
				srv.Push(providertest.Reply{Text: "Let me look.", ToolCalls: calls[:n], Chunks: 4})
				p := newProvider(t, srv)
				resp := call(t, p, mode.stream, userReq("look"), nil)
				want := []providers.ToolCallRequest{
					{ID: "toolu_1", Name: "read_file", Arguments: map[string]any{"path": "notes.md"}, RawArguments: `{"path":"notes.md"}`},
					{ID: "toolu_2", Name: "exec", Arguments: map[string]any{"command": "date"}, RawArguments: `{"command":"date"}`},
				}[:n]
				if diff := cmp.Diff(want, resp.ToolCalls); diff != "" {
					t.Errorf("tool calls (-want +got):\n%s", diff)
				}
				if resp.FinishReason != providers.FinishToolCalls || resp.Content != "Let me look." {
					t.Errorf("finish %q content %q", resp.FinishReason, resp.Content)
				}
			})
		}
	}
}

func TestStreamDeltasAndThinking(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{
		Thinking: []providertest.Thinking{{Text: "The user greets me; answer warmly.", Signature: "sig-abc"}},
		Text:     "Hello, how can I help today?",
		Chunks:   4,
	})
	p := newProvider(t, srv)
	var deltas []providers.Delta
	resp := call(t, p, true, userReq("hello"), func(d providers.Delta) { deltas = append(deltas, d) })

	var text, reasoning strings.Builder
	sawTextBeforeReasoningEnd := false
	for _, d := range deltas {
		if d.Content != "" {
			text.WriteString(d.Content)
		}
		if d.Reasoning != "" {
			if text.Len() > 0 {
				sawTextBeforeReasoningEnd = true
			}
			reasoning.WriteString(d.Reasoning)
		}
	}
	if len(deltas) != 8 {
		t.Errorf("got %d deltas, want 8 (4 thinking + 4 text)", len(deltas))
	}
	if sawTextBeforeReasoningEnd {
		t.Error("deltas out of order: text before thinking finished")
	}
	if text.String() != "Hello, how can I help today?" || reasoning.String() != "The user greets me; answer warmly." {
		t.Errorf("text %q reasoning %q", text.String(), reasoning.String())
	}
	want := []providers.ThinkingBlock{{Type: "thinking", Thinking: "The user greets me; answer warmly.", Signature: "sig-abc"}}
	if diff := cmp.Diff(want, resp.ThinkingBlocks); diff != "" {
		t.Errorf("thinking blocks (-want +got):\n%s", diff)
	}
}

func TestThinkingReplayWithSignature(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv := providertest.New(t)
			srv.Push(
				providertest.Reply{
					Thinking: []providertest.Thinking{
						{Text: "I should check the file.", Signature: "sig-1"},
						{Redacted: "opaque-redacted"},
					},
					ToolCalls: []providertest.ToolCall{{ID: "toolu_9", Name: "read_file", Arguments: `{"path":"a"}`}},
				},
				providertest.Reply{Text: "It says hi."},
			)
			p := newProvider(t, srv)
			req := userReq("what is in a?")
			req.ReasoningEffort = "low"
			first := call(t, p, mode.stream, req, nil)
			wantBlocks := []providers.ThinkingBlock{
				{Type: "thinking", Thinking: "I should check the file.", Signature: "sig-1"},
				{Type: "redacted_thinking", Data: "opaque-redacted"},
			}
			if diff := cmp.Diff(wantBlocks, first.ThinkingBlocks); diff != "" {
				t.Fatalf("thinking blocks (-want +got):\n%s", diff)
			}

			req.Messages = append(req.Messages,
				providers.Message{Role: providers.RoleAssistant, ThinkingBlocks: first.ThinkingBlocks, ToolCalls: []providers.ToolCall{
					{ID: "toolu_9", Type: "function", Function: providers.FunctionCall{Name: "read_file", Arguments: first.ToolCalls[0].RawArguments}}}},
				providers.Message{Role: providers.RoleTool, ToolCallID: "toolu_9", Content: "hi"},
			)
			call(t, p, mode.stream, req, nil)
			sent := srv.Requests()[1].Messages()
			wantAssistant := map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "thinking", "thinking": "I should check the file.", "signature": "sig-1"},
				map[string]any{"type": "redacted_thinking", "data": "opaque-redacted"},
				map[string]any{"type": "tool_use", "id": "toolu_9", "name": "read_file", "input": map[string]any{"path": "a"},
					"cache_control": map[string]any{"type": "ephemeral"}},
			}}
			if diff := cmp.Diff(wantAssistant, sent[1]); diff != "" {
				t.Errorf("replayed assistant turn (-want +got):\n%s", diff)
			}
			wantTool := map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": "toolu_9", "content": []any{map[string]any{"type": "text", "text": "hi"}}},
			}}
			if diff := cmp.Diff(wantTool, sent[2]); diff != "" {
				t.Errorf("tool result turn (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHistoryConversion(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "ok"})
	p := newProvider(t, srv)
	img := "data:image/jpg;base64,/9j/4AAQ"
	req := providers.ChatRequest{Model: "claude-test", Messages: []providers.Message{
		{Role: providers.RoleSystem, Content: "sys"},
		{Role: providers.RoleUser, Parts: []providers.ContentPart{providers.TextPart("look at this"), providers.ImagePart(img)}},
		{Role: providers.RoleAssistant, Content: "Checking two things.", ToolCalls: []providers.ToolCall{
			{ID: "t1", Type: "function", Function: providers.FunctionCall{Name: "a", Arguments: `{"x":1}`}},
			{ID: "t2", Type: "function", Function: providers.FunctionCall{Name: "b", Arguments: `{"y":`}}, // broken: replayed repaired
		}},
		{Role: providers.RoleTool, ToolCallID: "t1", Content: "one"},
		{Role: providers.RoleTool, ToolCallID: "t2", Content: "two"},
		{Role: providers.RoleAssistant, Content: "Both done."},
		{Role: providers.RoleUser, Content: "thanks"},
	}}
	if _, err := p.Chat(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	eph := map[string]any{"type": "ephemeral"}
	want := []map[string]any{
		{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "look at this"},
			map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQ"}},
		}},
		{"role": "assistant", "content": []any{
			map[string]any{"type": "text", "text": "Checking two things."},
			map[string]any{"type": "tool_use", "id": "t1", "name": "a", "input": map[string]any{"x": 1.0}},
			map[string]any{"type": "tool_use", "id": "t2", "name": "b", "input": map[string]any{"y": nil}},
		}},
		{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": []any{map[string]any{"type": "text", "text": "one"}}},
			map[string]any{"type": "tool_result", "tool_use_id": "t2", "content": []any{map[string]any{"type": "text", "text": "two"}}},
		}},
		{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Both done.", "cache_control": eph}}},
		{"role": "user", "content": []any{map[string]any{"type": "text", "text": "thanks"}}},
	}
	if diff := cmp.Diff(want, srv.Requests()[0].Messages()); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

func TestRequestParameters(t *testing.T) {
	tools := []providers.ToolDefinition{{Name: "read_file", Description: "Read a file", Parameters: map[string]any{
		"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []string{"path"},
	}}}
	tests := []struct {
		name   string
		req    func(*providers.ChatRequest)
		checks map[string]any // nil: absent
	}{
		{name: "low effort", req: func(r *providers.ChatRequest) { r.ReasoningEffort = "low"; r.MaxTokens = 8000 },
			checks: map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 1024.0}, "max_tokens": 8000.0}},
		{name: "high effort raises max_tokens", req: func(r *providers.ChatRequest) { r.ReasoningEffort = "high"; r.MaxTokens = 2000 },
			checks: map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 16384.0}, "max_tokens": 18384.0}},
		{name: "medium, default max", req: func(r *providers.ChatRequest) { r.ReasoningEffort = "medium" },
			checks: map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 4096.0}, "max_tokens": 8192.0}},
		{name: "no effort", req: func(r *providers.ChatRequest) {}, checks: map[string]any{"thinking": nil, "tools": nil, "tool_choice": nil}},
		{name: "tools auto", req: func(r *providers.ChatRequest) { r.Tools = tools },
			checks: map[string]any{"tool_choice": nil, "tools": []any{map[string]any{
				"name": "read_file", "description": "Read a file",
				"input_schema": map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []any{"path"}},
			}}}},
		{name: "tool choice none", req: func(r *providers.ChatRequest) { r.Tools, r.ToolChoice = tools, "none" },
			checks: map[string]any{"tool_choice": map[string]any{"type": "none"}}},
		{name: "tool choice auto", req: func(r *providers.ChatRequest) { r.Tools, r.ToolChoice = tools, "auto" },
			checks: map[string]any{"tool_choice": map[string]any{"type": "auto"}}},
		{name: "tool choice required", req: func(r *providers.ChatRequest) { r.Tools, r.ToolChoice = tools, "required" },
			checks: map[string]any{"tool_choice": map[string]any{"type": "any"}}},
		{name: "named tool disables thinking", req: func(r *providers.ChatRequest) {
			r.Tools, r.ToolChoice, r.ReasoningEffort = tools, "read_file", "high"
		}, checks: map[string]any{"tool_choice": map[string]any{"type": "tool", "name": "read_file"}, "thinking": nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.New(t)
			srv.Push(providertest.Reply{Text: "ok"})
			p := newProvider(t, srv)
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

func TestBrokenStreamedToolInput(t *testing.T) {
	tests := []struct {
		args    string
		want    map[string]any
		wantErr bool
	}{
		{args: `{"path": "a.md",}`, want: map[string]any{"path": "a.md"}},
		{args: `{"path": "a.md"`, want: map[string]any{"path": "a.md"}},
		{args: `not json at all`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			srv := providertest.New(t)
			srv.Push(providertest.Reply{ToolCalls: []providertest.ToolCall{{ID: "t", Name: "read_file", Arguments: tt.args}}})
			p := newProvider(t, srv)
			resp := call(t, p, true, userReq("x"), nil)
			tc := resp.ToolCalls[0]
			if (tc.ArgumentsError != "") != tt.wantErr {
				t.Fatalf("ArgumentsError = %q, wantErr %v", tc.ArgumentsError, tt.wantErr)
			}
			if !tt.wantErr {
				if diff := cmp.Diff(tt.want, tc.Arguments); diff != "" {
					t.Errorf("arguments (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestErrorClassification(t *testing.T) {
	tests := []struct {
		name          string
		reply         providertest.Reply
		wantStatus    int
		wantTransient bool
		wantRetryMs   int64
	}{
		{name: "rate limited", reply: providertest.Reply{Status: 429, RetryAfter: "3"}, wantStatus: 429, wantTransient: true, wantRetryMs: 3000},
		{name: "overloaded", reply: providertest.Reply{Status: 529}, wantStatus: 529, wantTransient: true},
		{name: "invalid request", reply: providertest.Reply{Status: 400}, wantStatus: 400},
		{name: "auth", reply: providertest.Reply{Status: 401, Body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + testKey + `"}}`}, wantStatus: 401},
		{name: "credits", reply: providertest.Reply{Status: 429, Body: `{"type":"error","error":{"type":"rate_limit_error","message":"Your credit balance is too low"}}`}, wantStatus: 429},
	}
	for _, tt := range tests {
		for _, mode := range modes {
			t.Run(tt.name+"/"+mode.name, func(t *testing.T) {
				srv := providertest.New(t)
				srv.Push(tt.reply)
				p := newProvider(t, srv)
				pe := failingCall(t, p, mode.stream, nil)
				if pe.StatusCode != tt.wantStatus || pe.Transient != tt.wantTransient || pe.RetryAfter != tt.wantRetryMs {
					t.Errorf("got status %d transient %v retryAfter %d, want %d %v %d",
						pe.StatusCode, pe.Transient, pe.RetryAfter, tt.wantStatus, tt.wantTransient, tt.wantRetryMs)
				}
				if strings.Contains(pe.Error(), testKey) {
					t.Errorf("error leaks the API key: %q", pe.Error())
				}
			})
		}
	}
}

func TestStreamFaults(t *testing.T) {
	t.Run("idle timeout", func(t *testing.T) {
		srv := providertest.New(t)
		srv.Push(providertest.Reply{Text: "stalling answer", Chunks: 3, StallAfter: 5})
		p := newProvider(t, srv, func(o *anthropic.Options) { o.StreamIdleTimeout = 150 * time.Millisecond })
		got := 0
		_, err := p.Stream(t.Context(), userReq("x"), func(providers.Delta) { got++ })
		if !errors.Is(err, providers.ErrStreamIdle) || !providers.IsTransient(err) {
			t.Fatalf("err = %v, want transient ErrStreamIdle", err)
		}
		if got == 0 {
			t.Error("no delta before the stall")
		}
	})
	t.Run("cancel mid-stream", func(t *testing.T) {
		srv := providertest.New(t)
		srv.Push(providertest.Reply{Text: "never finished", Chunks: 3, StallAfter: 5})
		p := newProvider(t, srv)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		_, err := p.Stream(ctx, userReq("x"), func(providers.Delta) { cancel() })
		if !errors.Is(err, context.Canceled) || providers.IsTransient(err) {
			t.Fatalf("err = %v, want non-transient context.Canceled", err)
		}
	})
	t.Run("dropped connection", func(t *testing.T) {
		srv := providertest.New(t)
		srv.Push(providertest.Reply{Text: "cut off", Chunks: 3, DropAfter: 5})
		p := newProvider(t, srv)
		_, err := p.Stream(t.Context(), userReq("x"), nil)
		if err == nil || !providers.IsTransient(err) {
			t.Fatalf("err = %v, want a transient error", err)
		}
	})
	t.Run("slow first byte hits request timeout", func(t *testing.T) {
		srv := providertest.New(t)
		srv.Push(providertest.Reply{Text: "late", Delay: time.Minute})
		p := newProvider(t, srv, func(o *anthropic.Options) { o.RequestTimeout = 100 * time.Millisecond })
		_, err := p.Stream(t.Context(), userReq("x"), nil)
		if !errors.Is(err, providers.ErrRequestTimeout) || !providers.IsTransient(err) {
			t.Fatalf("err = %v, want transient ErrRequestTimeout", err)
		}
	})
}

func TestAPIBaseWithV1(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "ok"})
	p := newProvider(t, srv, func(o *anthropic.Options) { o.APIBase = srv.URL + "/v1/" })
	if _, err := p.Chat(t.Context(), userReq("x")); err != nil {
		t.Fatal(err)
	}
	if path := srv.Requests()[0].Path; path != "/v1/messages" {
		t.Errorf("path = %q", path)
	}
}

func TestInBandStreamError(t *testing.T) {
	tests := []struct {
		name          string
		event         string
		wantTransient bool
	}{
		{name: "overloaded", wantTransient: true},
		{name: "invalid", event: `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.New(t)
			srv.Push(providertest.Reply{Text: "partial answer", ErrorAfter: 3, ErrorEvent: tt.event})
			p := newProvider(t, srv)
			pe := failingCall(t, p, true, nil)
			if pe.Transient != tt.wantTransient {
				t.Errorf("transient = %v, want %v (%v)", pe.Transient, tt.wantTransient, pe)
			}
		})
	}
}
