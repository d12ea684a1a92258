package openai_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/openai"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// rawServer answers every request with status and body as given, and
// records the request bodies.
type rawServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
}

func newRawServer(t *testing.T, contentType, body string) *rawServer {
	t.Helper()
	rs := &rawServer{}
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("request body is not a JSON object: %v: %s", err, b)
		}
		rs.mu.Lock()
		rs.bodies = append(rs.bodies, m)
		rs.mu.Unlock()
		w.Header().Set("Content-Type", contentType)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(rs.Close)
	return rs
}

func (rs *rawServer) body(t *testing.T) map[string]any {
	t.Helper()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.bodies) != 1 {
		t.Fatalf("server got %d requests, want 1", len(rs.bodies))
	}
	return rs.bodies[0]
}

func rawProvider(t *testing.T, rs *rawServer) *openai.Provider {
	t.Helper()
	p, err := openai.New(openai.Options{Endpoint: providers.Endpoint{Name: "testai", APIKey: testKey, APIBase: rs.URL + "/v1"}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Config extraBody keys replace what we would send, at the top level only
// (a dotted key is one key), and a stream stays a stream.
func TestExtraBodyMerge(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "chat", true: "stream"}[stream], func(t *testing.T) {
			srv := providertest.New(t)
			srv.Push(providertest.Reply{Text: "ok"})
			p := newProvider(t, srv, func(o *openai.Options) {
				o.ExtraBody = map[string]any{
					"temperature": 1.0, "stream": false, "a.b": "dotted",
					"provider": map[string]any{"order": []any{"x", "y"}}, "enable_thinking": true,
				}
			})
			req := userReq("x")
			temp := 0.2
			req.Temperature = &temp
			var err error
			if stream {
				_, err = p.Stream(t.Context(), req, nil)
			} else {
				_, err = p.Chat(t.Context(), req)
			}
			if err != nil {
				t.Fatal(err)
			}
			body := srv.Requests()[0].Body
			want := map[string]any{
				"temperature": 1.0, "stream": stream, "a.b": "dotted",
				"provider": map[string]any{"order": []any{"x", "y"}}, "enable_thinking": true, "model": "test-model",
			}
			for k, v := range want {
				if diff := cmp.Diff(v, body[k]); diff != "" {
					t.Errorf("body[%s] (-want +got):\n%s", k, diff)
				}
			}
			if _, ok := body["a"]; ok {
				t.Error(`"a.b" was read as a path`)
			}
		})
	}
}

// Servers bend the format: content as a list of parts, tool arguments as
// an object, reasoning as an object, a number where a string belongs.
// None of it may lose the answer.
func TestLenientResponse(t *testing.T) {
	body := `{"id":"x","model":"m1","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant",
		"content":[{"type":"text","text":"hello "},{"type":"text","text":"world"}],
		"reasoning":{"effort":"low"},"refusal":7,
		"tool_calls":[{"id":"c1","type":"function","function":{"name":"ls","arguments":{"path":"/tmp"}}}]}}],
		"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_cache_hit_tokens":8}}`
	rs := newRawServer(t, "application/json", body)
	resp, err := rawProvider(t, rs).Chat(t.Context(), userReq("x"))
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	want := &providers.LLMResponse{
		Content: "hello world", FinishReason: providers.FinishToolCalls, Model: "m1",
		ToolCalls: []providers.ToolCallRequest{{ID: "c1", Name: "ls", Arguments: map[string]any{"path": "/tmp"}, RawArguments: `{"path":"/tmp"}`}},
		Usage:     providers.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12, CacheReadTokens: 8},
	}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
}

// The stream reader follows the event-stream format: comments, CRLF line
// ends, an event field, data split over several lines, blank keep-alives.
func TestStreamFraming(t *testing.T) {
	stream := ": keep-alive\r\n\r\n" +
		"data: {\"model\":\"m2\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\r\n\r\n" +
		"\n\n" +
		"event: message\n" +
		"data: {\"choices\":[{\"index\":0,\n" +
		"data: \"delta\":{\"content\":\"lo\"}}]}\n\n" +
		"data:{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}}\n\n" +
		"data: [DONE]\n\n"
	rs := newRawServer(t, "text/event-stream", stream)
	var deltas []string
	resp, err := rawProvider(t, rs).Stream(t.Context(), userReq("x"), func(d providers.Delta) { deltas = append(deltas, d.Content) })
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if diff := cmp.Diff([]string{"Hel", "lo"}, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	want := &providers.LLMResponse{Content: "Hello", FinishReason: providers.FinishStop, Model: "m2",
		Usage: providers.Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
}

// A chunk that is not JSON fails the call instead of being skipped.
func TestStreamBadChunk(t *testing.T) {
	rs := newRawServer(t, "text/event-stream", "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\ndata: {not json\n\n")
	_, err := rawProvider(t, rs).Stream(t.Context(), userReq("x"), nil)
	var pe *providers.Error
	if !errors.As(err, &pe) || !strings.Contains(pe.Message, "decode stream chunk") {
		t.Fatalf("err = %v, want a provider error naming the bad chunk", err)
	}
}

// Azure credentials go over TLS, except to loopback.
func TestAzureRefusesPlainHTTP(t *testing.T) {
	_, err := openai.New(openai.Options{Endpoint: providers.Endpoint{APIKey: "k", APIBase: "http://example.openai.azure.com"}, AzureAPIVersion: "2024-10-21"})
	if err == nil || !strings.Contains(err.Error(), "https") {
		t.Fatalf("New = %v, want an error asking for https", err)
	}
	if _, err := openai.New(openai.Options{Endpoint: providers.Endpoint{APIKey: "k", APIBase: "https://example.openai.azure.com"}, AzureAPIVersion: "2024-10-21"}); err != nil {
		t.Fatalf("New over https: %v", err)
	}
}

// What the Responses tests elsewhere do not pin: image parts, a named
// tool choice, the assistant's own text, tool declarations.
func TestResponsesRequestShapes(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "ok"})
	p := newResponses(t, srv)
	img := "data:image/png;base64,iVBORw0KGgo="
	temp := 0.5
	req := providers.ChatRequest{Model: "m", MaxTokens: 64, Temperature: &temp, ToolChoice: "read_file", Messages: []providers.Message{
		{Role: providers.RoleSystem, Content: "one"},
		{Role: providers.RoleSystem, Content: "two"},
		{Role: providers.RoleUser, Parts: []providers.ContentPart{providers.TextPart("look"), providers.ImagePart(img)}},
		{Role: providers.RoleAssistant, Content: "a cat"},
		{Role: providers.RoleUser, Content: "sure?"},
	}, Tools: []providers.ToolDefinition{{Name: "read_file", Parameters: map[string]any{"type": "object"}}}}
	if _, err := p.Chat(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	r := srv.Requests()[0]
	wantInput := []map[string]any{
		{"role": "user", "content": []any{
			map[string]any{"type": "input_text", "text": "look"},
			map[string]any{"type": "input_image", "image_url": img, "detail": "auto"},
		}},
		{"role": "assistant", "content": "a cat"},
		{"role": "user", "content": "sure?"},
	}
	if diff := cmp.Diff(wantInput, r.Input()); diff != "" {
		t.Errorf("input (-want +got):\n%s", diff)
	}
	checks := map[string]any{
		"instructions":      "one\n\ntwo",
		"max_output_tokens": 64.0,
		"temperature":       0.5,
		"tool_choice":       map[string]any{"type": "function", "name": "read_file"},
		"tools": []any{map[string]any{"type": "function", "name": "read_file", "strict": false,
			"parameters": map[string]any{"type": "object", "properties": map[string]any{}}}},
		"store":     false,
		"reasoning": nil,
		"stream":    nil,
	}
	for k, v := range checks {
		if diff := cmp.Diff(v, r.Body[k]); diff != "" {
			t.Errorf("body[%s] (-want +got):\n%s", k, diff)
		}
	}
}

// response.failed carries the vendor's code: a client mistake is
// permanent, anything else worth a retry.
func TestResponsesFailedEvent(t *testing.T) {
	tests := []struct {
		code          string
		wantTransient bool
	}{
		{"server_error", true},
		{"invalid_prompt", false},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			stream := "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"status\":\"in_progress\",\"output\":[]}}\n\n" +
				"event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"output\":[]," +
				"\"error\":{\"code\":\"" + tt.code + "\",\"message\":\"it broke for " + testKey + "\"}}}\n\n"
			rs := newRawServer(t, "text/event-stream", stream)
			p, err := openai.NewResponses(openai.Options{Endpoint: providers.Endpoint{Name: "testai", APIKey: testKey, APIBase: rs.URL + "/v1"}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Stream(t.Context(), userReq("x"), nil)
			var pe *providers.Error
			if !errors.As(err, &pe) || pe.Transient != tt.wantTransient || !strings.Contains(pe.Message, tt.code+": it broke") {
				t.Fatalf("err = %v, want transient=%v naming %s", err, tt.wantTransient, tt.code)
			}
			if strings.Contains(pe.Error(), testKey) {
				t.Errorf("error leaks the key: %v", pe)
			}
		})
	}
}

// OpenAI's reasoning models refuse any temperature but their default:
// it is left out for them (on both wires), and sent for the others.
func TestReasoningModelsGetNoTemperature(t *testing.T) {
	temp := 0.1
	for model, sent := range map[string]bool{
		"gpt-5": false, "gpt-5-mini": false, "openai/gpt-5-nano": false, "o3": false, "o4-mini": false, "o1-2024-12-17": false,
		"gpt-5-chat-latest": true, "gpt-4o": true, "o1x": true, "deepseek-chat": true,
	} {
		for _, responses := range []bool{false, true} {
			srv := providertest.New(t)
			srv.Push(providertest.Reply{Text: "ok"})
			var p providers.Provider = newProvider(t, srv)
			if responses {
				p = newResponses(t, srv)
			}
			req := userReq("x")
			req.Model, req.Temperature = model, &temp
			if _, err := p.Chat(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			if _, got := srv.Requests()[0].Body["temperature"]; got != sent {
				t.Errorf("%s (responses %v): temperature sent %v, want %v", model, responses, got, sent)
			}
		}
	}
}
