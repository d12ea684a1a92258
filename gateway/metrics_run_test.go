package gateway

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

// clockTool is a tool the scripted model calls.
type clockTool struct{}

func (clockTool) Name() string               { return "clock" }
func (clockTool) Description() string        { return "tells the time" }
func (clockTool) Parameters() map[string]any { return map[string]any{"type": "object"} }
func (clockTool) Execute(context.Context, map[string]any) (tools.Result, error) {
	return tools.Result{Content: "12:00"}, nil
}

// toolLLM asks for the clock once, then answers; every call reports usage.
type toolLLM struct{ calls atomic.Int32 }

func (l *toolLLM) Chat(_ context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
	l.calls.Add(1)
	usage := providers.Usage{PromptTokens: 100, CompletionTokens: 7, CacheReadTokens: 60}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != providers.RoleTool {
		return &providers.LLMResponse{FinishReason: "tool_calls", Usage: usage,
			ToolCalls: []providers.ToolCallRequest{{ID: "t1", Name: "clock", Arguments: map[string]any{}}}}, nil
	}
	return &providers.LLMResponse{Content: "It is " + last.Content, FinishReason: "stop", Usage: usage}, nil
}

func (l *toolLLM) Stream(ctx context.Context, req providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	r, err := l.Chat(ctx, req)
	if err == nil && r.Content != "" {
		onDelta(providers.Delta{Content: r.Content})
	}
	return r, err
}

// The LLM latency, token and tool metric families are recorded by a real
// turn with a tool call (they used to be declared and never written).
func TestMetricsAfterTurnWithToolCall(t *testing.T) {
	fc := newFake("fake")
	reg := tools.NewRegistry()
	if err := reg.Register(clockTool{}); err != nil {
		t.Fatal(err)
	}
	r := startGatewayOpts(t, testConfig(map[string][]any{"fake": {"*"}}), &toolLLM{}, func(o *Options) { o.Tools = reg }, fc)
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c1", SenderID: "u1", Content: "time?", MessageID: "1"}
	waitfor.True(t, "reply", func() bool {
		got := fc.texts("c1") // the tool hint, then the answer
		return len(got) > 0 && got[len(got)-1] == "It is 12:00"
	})
	var body string
	want := []string{
		`nanobot_llm_request_duration_seconds_count{model="test",outcome="ok",provider=""} 2`,
		`nanobot_llm_tokens_total{kind="input",model="test",provider=""} 200`,
		`nanobot_llm_tokens_total{kind="output",model="test",provider=""} 14`,
		`nanobot_llm_tokens_total{kind="cache_read",model="test",provider=""} 120`,
		`nanobot_tool_calls_total{outcome="ok",tool="clock"} 1`,
	}
	// The turn's reply is delivered before the observer of its last call
	// may have run in another goroutine: poll the scrape.
	waitfor.True(t, "metrics", func() bool {
		_, body = get(t, "http://"+r.addr+"/metrics")
		for _, w := range want {
			if !strings.Contains(body, w) {
				return false
			}
		}
		return true
	})
}
