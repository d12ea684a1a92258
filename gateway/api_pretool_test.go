package gateway

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

// sayThenCallLLM says something and calls the clock tool in one answer,
// then answers with the tool's result; Stream streams the words first.
type sayThenCallLLM struct{}

func (sayThenCallLLM) Chat(_ context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role != providers.RoleTool {
		return &providers.LLMResponse{Content: "Let me look.", FinishReason: "tool_calls",
			ToolCalls: []providers.ToolCallRequest{{ID: "t1", Name: "clock", Arguments: map[string]any{}}}}, nil
	}
	return &providers.LLMResponse{Content: "It is " + last.Content, FinishReason: "stop"}, nil
}

func (l sayThenCallLLM) Stream(ctx context.Context, req providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	r, err := l.Chat(ctx, req)
	if err == nil && r.Content != "" {
		onDelta(providers.Delta{Content: r.Content})
	}
	return r, err
}

// What the agent says before calling tools comes first in the API's
// answer, a blank line before the rest (docs/api.md), streamed or not,
// whatever channels.sendProgress says for the chat platforms.
func TestAPIAnswerKeepsTheTextBeforeToolCalls(t *testing.T) {
	for _, progress := range []bool{true, false} {
		reg := tools.NewRegistry()
		if err := reg.Register(clockTool{}); err != nil {
			t.Fatal(err)
		}
		cfg := apiConfig()
		cfg.Channels.SendProgress = progress
		r := startGatewayOpts(t, cfg, sayThenCallLLM{}, func(o *Options) { o.Tools = reg })
		cl := apiClient(t, r)
		params := openai.ChatCompletionNewParams{Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("time?")}}
		const want = "Let me look.\n\nIt is 12:00"
		resp, err := cl.Chat.Completions.New(t.Context(), params)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Choices[0].Message.Content; got != want {
			t.Errorf("sendProgress %v: answer %q, want %q", progress, got, want)
		}
		acc, _, err := streamAnswer(t.Context(), cl, params)
		if err != nil {
			t.Fatal(err)
		}
		if got := acc.Choices[0].Message.Content; got != want {
			t.Errorf("sendProgress %v: streamed answer %q, want %q", progress, got, want)
		}
	}
}
