package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/openai"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

func newResponses(t *testing.T, srv *providertest.Server, mod ...func(*openai.Options)) *openai.Responses {
	t.Helper()
	opts := openai.Options{Endpoint: providers.Endpoint{Name: "testai", APIKey: testKey, APIBase: srv.OpenAIBase(), HTTPClient: srv.Client()}}
	for _, m := range mod {
		m(&opts)
	}
	p, err := openai.NewResponses(opts)
	if err != nil {
		t.Fatalf("openai.NewResponses: %v", err)
	}
	return p
}

// A reasoning turn with a tool call streams its summary and nothing else
// as text, and returns the reasoning item with its encrypted content, the
// call and the usage with reasoning and cached tokens.
func TestResponsesStreamReasoningAndToolCall(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{
		Reasoning: "need the file", Encrypted: "gAAAA-opaque-blob",
		ToolCalls: []providertest.ToolCall{{ID: "call_7", Name: "read_file", Arguments: `{"path":"a.txt"}`}},
		Usage:     &providertest.Usage{PromptTokens: 100, CompletionTokens: 40, CacheReadTokens: 64, ReasoningTokens: 32},
	})
	p := newResponses(t, srv)
	req := userReq("read a.txt")
	req.ReasoningEffort = "high"
	req.CacheKey = "telegram:42"
	req.Tools = []providers.ToolDefinition{{Name: "read_file", Description: "read a file", Parameters: map[string]any{
		"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}}}

	var reasoning, text strings.Builder
	resp, err := p.Stream(t.Context(), req, func(d providers.Delta) {
		reasoning.WriteString(d.Reasoning)
		text.WriteString(d.Content)
	})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if got := reasoning.String(); got != "need the file" {
		t.Errorf("streamed reasoning = %q, want %q", got, "need the file")
	}
	if got := text.String(); got != "" {
		t.Errorf("streamed text = %q, want none", got)
	}
	want := &providers.LLMResponse{
		FinishReason: providers.FinishToolCalls, Model: "test-model", ReasoningContent: "need the file",
		ToolCalls: []providers.ToolCallRequest{{ID: "call_7", Name: "read_file",
			Arguments: map[string]any{"path": "a.txt"}, RawArguments: `{"path":"a.txt"}`}},
		ReasoningItems: []providers.ReasoningItem{{EncryptedContent: "gAAAA-opaque-blob", Summary: []string{"need the file"}}},
		Usage:          providers.Usage{PromptTokens: 100, CompletionTokens: 40, TotalTokens: 140, CacheReadTokens: 64, ReasoningTokens: 32},
	}
	if len(resp.ReasoningItems) != 1 || !strings.HasPrefix(resp.ReasoningItems[0].ID, "rs_") {
		t.Fatalf("reasoning items = %+v, want one with an rs_ id", resp.ReasoningItems)
	}
	resp.ReasoningItems[0].ID = ""
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}

	r := srv.Requests()[0]
	if r.Format != providertest.Responses || r.Path != "/v1/responses" || !r.Stream {
		t.Errorf("request = %s %s stream=%v, want POST /v1/responses streaming", r.Method, r.Path, r.Stream)
	}
	checks := map[string]any{
		"store":            false,
		"instructions":     "be brief",
		"prompt_cache_key": "telegram:42",
		"include":          []any{"reasoning.encrypted_content"},
		"reasoning":        map[string]any{"effort": "high", "summary": "auto"},
		"tool_choice":      nil,
	}
	for k, v := range checks {
		if diff := cmp.Diff(v, r.Body[k]); diff != "" {
			t.Errorf("body[%s] (-want +got):\n%s", k, diff)
		}
	}
	tools, _ := r.Body["tools"].([]any)
	if len(tools) != 1 || tools[0].(map[string]any)["type"] != "function" || tools[0].(map[string]any)["name"] != "read_file" {
		t.Errorf("tools = %v, want one function tool read_file", r.Body["tools"])
	}
	if diff := cmp.Diff([]map[string]any{{"role": "user", "content": "read a.txt"}}, r.Input()); diff != "" {
		t.Errorf("input (-want +got):\n%s", diff)
	}
}

// The next call replays the reasoning item verbatim (encrypted content
// included), then the function call and its output, in order.
func TestResponsesReplaysReasoningAndToolResults(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(
		providertest.Reply{Reasoning: "look", Encrypted: "enc-1",
			ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"a"}`}}},
		providertest.Reply{Text: "it says hi"},
	)
	p := newResponses(t, srv)
	req := userReq("what is in a?")
	first, err := p.Chat(t.Context(), req)
	if err != nil {
		t.Fatalf("Chat 1: %v", err)
	}
	// What the agent stores (and a session reload must keep).
	asst := providers.Message{Role: providers.RoleAssistant, ReasoningItems: first.ReasoningItems,
		ToolCalls: []providers.ToolCall{{ID: "call_1", Type: "function", Function: providers.FunctionCall{Name: "read_file", Arguments: `{"path":"a"}`}}}}
	asst = roundTrip(t, asst)
	req.Messages = append(req.Messages, asst, providers.Message{Role: providers.RoleTool, ToolCallID: "call_1", Name: "read_file", Content: "hi"})
	second, err := p.Chat(t.Context(), req)
	if err != nil {
		t.Fatalf("Chat 2: %v", err)
	}
	if second.Content != "it says hi" || second.FinishReason != providers.FinishStop {
		t.Errorf("second = %q %q, want %q stop", second.Content, second.FinishReason, "it says hi")
	}
	in := srv.Requests()[1].Input()
	want := []map[string]any{
		{"role": "user", "content": "what is in a?"},
		{"type": "reasoning", "id": first.ReasoningItems[0].ID, "encrypted_content": "enc-1",
			"summary": []any{map[string]any{"type": "summary_text", "text": "look"}}},
		{"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": `{"path":"a"}`},
		{"type": "function_call_output", "call_id": "call_1", "output": "hi"},
	}
	if diff := cmp.Diff(want, in); diff != "" {
		t.Errorf("replayed input (-want +got):\n%s", diff)
	}
}

func roundTrip(t *testing.T, m providers.Message) providers.Message {
	t.Helper()
	b, err := m.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var out providers.Message
	if err := out.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestResponsesFinishReasons(t *testing.T) {
	tests := []struct {
		finish string
		want   string
	}{
		{"", providers.FinishStop},
		{"length", providers.FinishLength},
		{"content_filter", providers.FinishContentFilter},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			srv := providertest.New(t)
			srv.Push(providertest.Reply{Text: "partial", FinishReason: tt.finish}, providertest.Reply{Text: "partial", FinishReason: tt.finish})
			p := newResponses(t, srv)
			resp, err := p.Chat(t.Context(), userReq("x"))
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if resp.FinishReason != tt.want || resp.Content != "partial" {
				t.Errorf("Chat = %q %q, want %q", resp.Content, resp.FinishReason, tt.want)
			}
			resp, err = p.Stream(t.Context(), userReq("x"), nil)
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if resp.FinishReason != tt.want {
				t.Errorf("Stream finish = %q, want %q", resp.FinishReason, tt.want)
			}
		})
	}
}

func TestResponsesErrors(t *testing.T) {
	t.Run("rate limited", func(t *testing.T) {
		srv := providertest.New(t)
		srv.Push(providertest.Reply{Status: http.StatusTooManyRequests, RetryAfter: "2"})
		_, err := newResponses(t, srv).Chat(t.Context(), userReq("x"))
		var pe *providers.Error
		if !errors.As(err, &pe) || pe.StatusCode != 429 || !pe.Transient || pe.RetryAfter != 2000 {
			t.Fatalf("err = %#v, want transient 429 with retry-after 2s", err)
		}
		if strings.Contains(err.Error(), testKey) {
			t.Errorf("error leaks the key: %v", err)
		}
	})
	t.Run("error event mid-stream", func(t *testing.T) {
		srv := providertest.New(t)
		srv.Push(providertest.Reply{Text: "hello world", ErrorAfter: 4})
		var got strings.Builder
		_, err := newResponses(t, srv).Stream(t.Context(), userReq("x"), func(d providers.Delta) { got.WriteString(d.Content) })
		var pe *providers.Error
		if !errors.As(err, &pe) || !pe.Transient || !strings.Contains(pe.Message, "overloaded") {
			t.Fatalf("err = %v, want a transient error naming the server's message", err)
		}
	})
	t.Run("truncated stream", func(t *testing.T) {
		srv := providertest.New(t)
		srv.Push(providertest.Reply{Text: "hello world", DropAfter: 5})
		_, err := newResponses(t, srv).Stream(t.Context(), userReq("x"), nil)
		if !providers.IsTransient(err) {
			t.Fatalf("err = %v, want transient", err)
		}
	})
}

// A sign-in provider (Codex) adds its auth through the HTTP client's
// transport (providers/auth) and needs every call streamed.
func TestResponsesSignInTransportAndAlwaysStream(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "ok"})
	p := newResponses(t, srv, func(o *openai.Options) {
		o.APIKey = ""
		o.AlwaysStream = true
		o.HTTPClient = &http.Client{Transport: headerTransport{base: srv.Client().Transport, set: map[string]string{
			"Authorization": "Bearer oauth-token", "ChatGPT-Account-ID": "acct"}}}
	})
	resp, err := p.Chat(t.Context(), userReq("x"))
	if err != nil || resp.Content != "ok" {
		t.Fatalf("Chat = %v, %v", resp, err)
	}
	r := srv.Requests()[0]
	if !r.Stream || r.Header.Get("Authorization") != "Bearer oauth-token" || r.Header.Get("ChatGPT-Account-ID") != "acct" {
		t.Errorf("request stream=%v headers=%v, want streamed with the custom auth", r.Stream, r.Header)
	}
}

// headerTransport sets headers on every request, as a sign-in transport does.
type headerTransport struct {
	base http.RoundTripper
	set  map[string]string
}

func (h headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range h.set {
		req.Header.Set(k, v)
	}
	return h.base.RoundTrip(req)
}

// Prepare sees every request's fields after ExtraBody, and what it
// changes and the headers it adds are sent; its error ends the call
// before anything is sent.
func TestResponsesPrepare(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "one"}, providertest.Reply{Text: "two"})
	fail := false
	p := newResponses(t, srv, func(o *openai.Options) {
		o.ExtraBody = map[string]any{"custom": 1}
		o.Prepare = func(_ context.Context, model string, fields map[string]json.RawMessage, h http.Header) error {
			if fail {
				return errors.New("no way")
			}
			if string(fields["custom"]) != "1" {
				t.Errorf("Prepare saw custom = %s, want ExtraBody's 1", fields["custom"])
			}
			fields["extra_flag"] = json.RawMessage("true")
			delete(fields, "custom")
			h.Set("X-Model", model)
			return nil
		}
	})
	if _, err := p.Chat(t.Context(), userReq("hi")); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stream(t.Context(), userReq("hi"), nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range srv.Requests() {
		if r.Body["extra_flag"] != true || r.Body["custom"] != nil || r.Header.Get("X-Model") != r.Model {
			t.Errorf("stream %v: extra_flag %v, custom %v, X-Model %q", r.Stream, r.Body["extra_flag"], r.Body["custom"], r.Header.Get("X-Model"))
		}
	}
	fail = true
	if _, err := p.Stream(t.Context(), userReq("hi"), nil); err == nil || !strings.Contains(err.Error(), "no way") {
		t.Errorf("err = %v, want Prepare's", err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests, want 2 (none after Prepare failed)", n)
	}
}
