package anthropic_test

// The official SDK is kept for these tests only: what the lean client sends
// must fit the SDK's request types, and what it reads from a server must
// agree with what the SDK's own client reads from the same server.

import (
	"encoding/json"
	"testing"

	ant "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/anthropic"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// richRequest uses every kind of block the client sends.
func richRequest() providers.ChatRequest {
	return providers.ChatRequest{
		Model: "claude-test", ReasoningEffort: "medium", ToolChoice: "auto",
		Tools: []providers.ToolDefinition{{Name: "read_file", Description: "Read a file", Parameters: map[string]any{
			"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []string{"path"}}}},
		Messages: []providers.Message{
			{Role: providers.RoleSystem, Content: "sys"},
			{Role: providers.RoleUser, Parts: []providers.ContentPart{
				providers.TextPart("look"), providers.ImagePart("data:image/png;base64,iVBORw0KGgo="),
				providers.ImagePart("https://example.com/cat.jpg")}},
			{Role: providers.RoleAssistant, Content: "Reading.",
				ThinkingBlocks: []providers.ThinkingBlock{
					{Type: "thinking", Thinking: "read it", Signature: "sig"},
					{Type: "redacted_thinking", Data: "opaque"}},
				ToolCalls: []providers.ToolCall{{ID: "t1", Type: "function", Function: providers.FunctionCall{Name: "read_file", Arguments: `{"path":"a"}`}}}},
			{Role: providers.RoleTool, ToolCallID: "t1", Parts: []providers.ContentPart{
				providers.TextPart("contents"), providers.ImagePart("data:image/gif;base64,R0lGOD==")}},
			{Role: providers.RoleUser, Content: "and now?"},
		},
	}
}

func TestRequestFitsSDKTypes(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv := providertest.New(t)
			srv.Push(providertest.Reply{Text: "ok"})
			call(t, newProvider(t, srv), mode.stream, richRequest(), nil)
			var ours map[string]any
			raw := srv.Requests()[0].Raw
			if err := json.Unmarshal(raw, &ours); err != nil {
				t.Fatal(err)
			}
			if ours["stream"] != nil != mode.stream {
				t.Errorf("stream = %v", ours["stream"])
			}
			delete(ours, "stream") // the SDK adds it outside the params

			// Fields the SDK does not know are dropped on the way through,
			// and a block of the wrong shape lands in another variant.
			var params ant.MessageNewParams
			if err := json.Unmarshal(raw, &params); err != nil {
				t.Fatalf("SDK cannot read our request: %v", err)
			}
			back, err := json.Marshal(params)
			if err != nil {
				t.Fatal(err)
			}
			var theirs map[string]any
			if err := json.Unmarshal(back, &theirs); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(theirs, ours); diff != "" {
				t.Errorf("request through the SDK's types (-sdk +ours):\n%s", diff)
			}
		})
	}
}

// The SDK's client and ours, against the same scripted server, read the
// same answer and send the same auth and version headers.
func TestSDKClientAgrees(t *testing.T) {
	reply := providertest.Reply{
		Thinking:  []providertest.Thinking{{Text: "think first", Signature: "sig-1"}, {Redacted: "opaque"}},
		Text:      "Here you go.",
		ToolCalls: []providertest.ToolCall{{ID: "toolu_1", Name: "read_file", Arguments: `{"path":"notes.md"}`}},
		Usage:     &providertest.Usage{PromptTokens: 30, CompletionTokens: 12, CacheReadTokens: 500, CacheWriteTokens: 40},
		Chunks:    5,
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			srv := providertest.New(t)
			srv.Push(reply, reply)
			ours := call(t, newProvider(t, srv), mode.stream, userReq("x"), nil)

			client := ant.NewClient(option.WithoutEnvironmentDefaults(), option.WithBaseURL(srv.URL),
				option.WithAPIKey(testKey), option.WithHTTPClient(srv.Client()), option.WithMaxRetries(0))
			params := ant.MessageNewParams{Model: "claude-test", MaxTokens: 100,
				Messages: []ant.MessageParam{ant.NewUserMessage(ant.NewTextBlock("x"))}}
			var msg ant.Message
			if mode.stream {
				stream := client.Messages.NewStreaming(t.Context(), params)
				for stream.Next() {
					if err := msg.Accumulate(stream.Current()); err != nil {
						t.Fatal(err)
					}
				}
				if err := stream.Err(); err != nil {
					t.Fatal(err)
				}
			} else {
				m, err := client.Messages.New(t.Context(), params)
				if err != nil {
					t.Fatal(err)
				}
				msg = *m
			}
			if diff := cmp.Diff(fromSDK(t, &msg), ours); diff != "" {
				t.Errorf("answer (-sdk +ours):\n%s", diff)
			}
			reqs := srv.Requests()
			for _, h := range []string{"Authorization", "Anthropic-Version", "X-Api-Key", "Content-Type"} {
				if sdk, got := reqs[1].Header.Get(h), reqs[0].Header.Get(h); sdk != got {
					t.Errorf("header %s: SDK sends %q, we send %q", h, sdk, got)
				}
			}
		})
	}
}

// fromSDK is what the SDK's message means to us: its wire JSON (with the
// streamed deltas applied, for a stream) read by our parser.
func fromSDK(t *testing.T, m *ant.Message) *providers.LLMResponse {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := anthropic.ParseMessageJSON(data, "")
	if err != nil {
		t.Fatalf("%v in %s", err, data)
	}
	return resp
}
