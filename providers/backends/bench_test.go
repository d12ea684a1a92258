package backends_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/backends"
)

// memTransport answers every request from memory: the benchmark measures
// the adapter (request conversion, SDK encoding, response decoding and
// conversion back), not the network.
type memTransport struct{ body []byte }

func (m memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		_ = req.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/json"}},
		Body:    io.NopCloser(bytes.NewReader(m.body)),
		Request: req,
	}, nil
}

const openAIReply = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls",` +
	`"message":{"role":"assistant","content":"Let me check that file for you.","reasoning_content":"The user asks about the file.",` +
	`"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"notes/today.md\"}"}}]}}],` +
	`"usage":{"prompt_tokens":1800,"completion_tokens":40,"total_tokens":1840,"prompt_tokens_details":{"cached_tokens":1500}}}`

const anthropicReply = `{"id":"msg_1","type":"message","role":"assistant","model":"m","stop_reason":"tool_use","stop_sequence":null,"content":[` +
	`{"type":"thinking","thinking":"The user asks about the file.","signature":"c2lnbmF0dXJl"},` +
	`{"type":"text","text":"Let me check that file for you."},` +
	`{"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"notes/today.md"}}],` +
	`"usage":{"input_tokens":300,"output_tokens":40,"cache_read_input_tokens":1500,"cache_creation_input_tokens":0}}`

// benchRequest is a typical mid-conversation agent turn: a 2 KB system
// prompt, ten history messages including a tool round trip, six tools.
func benchRequest() providers.ChatRequest {
	msgs := []providers.Message{{Role: "system", Content: strings.Repeat("You are nanobot, a helpful assistant. ", 55)}}
	for i := range 4 {
		msgs = append(msgs,
			providers.Message{Role: "user", Content: fmt.Sprintf("Question %d about my notes?", i)},
			providers.Message{Role: "assistant", Content: fmt.Sprintf("Answer %d: here is what I found in your notes.", i)})
	}
	msgs = append(msgs,
		providers.Message{Role: "assistant", ToolCalls: []providers.ToolCall{{ID: "call_0", Type: "function",
			Function: providers.FunctionCall{Name: "list_dir", Arguments: `{"path":"notes"}`}}}},
		providers.Message{Role: "tool", ToolCallID: "call_0", Content: "today.md\nyesterday.md"},
		providers.Message{Role: "user", Content: "What is in today.md?"})
	var tools []providers.ToolDefinition
	for _, name := range []string{"read_file", "write_file", "list_dir", "exec", "web_search", "message"} {
		tools = append(tools, providers.ToolDefinition{Name: name, Description: "Tool " + name, Parameters: map[string]any{
			"type": "object", "required": []any{"path"},
			"properties": map[string]any{
				"path":    map[string]any{"type": "string", "description": "File path"},
				"content": map[string]any{"type": "string"},
				"limit":   map[string]any{"type": "integer", "minimum": 1},
			},
		}})
	}
	return providers.ChatRequest{Model: "m", Messages: msgs, Tools: tools, MaxTokens: 4096}
}

// BenchmarkAdapterOverhead is the cost nanobot adds per LLM call on top of
// the network: encode the request, decode the response, per backend.
func BenchmarkAdapterOverhead(b *testing.B) {
	cases := []struct {
		name, provider, body string
	}{
		{"openai", "deepseek", openAIReply},
		{"anthropic", "anthropic", anthropicReply},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			res, err := providers.Resolve("m", c.provider, map[string]providers.Settings{
				c.provider: {APIKey: "sk-bench-123456", APIBase: "http://bench.invalid"},
			})
			if err != nil {
				b.Fatal(err)
			}
			p, err := providers.New(res, providers.Options{
				Backends: backends.All(), NoRetry: true,
				HTTPClient: &http.Client{Transport: memTransport{body: []byte(c.body)}},
			})
			if err != nil {
				b.Fatal(err)
			}
			req := benchRequest()
			ctx := b.Context()
			b.ReportAllocs()
			for b.Loop() {
				resp, err := p.Chat(ctx, req)
				if err != nil || len(resp.ToolCalls) != 1 {
					b.Fatalf("resp %+v err %v", resp, err)
				}
			}
		})
	}
}
