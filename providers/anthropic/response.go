package anthropic

import (
	"strings"

	"github.com/nanobot-go/nanobot/providers"
)

// parseMessage converts a complete (or fully accumulated) message. A tool
// input that is not valid JSON is passed on as sent: it must reach the
// repair step, not vanish.
func parseMessage(msg *messageResponse, model string) *providers.LLMResponse {
	resp := &providers.LLMResponse{Model: msg.Model}
	if resp.Model == "" {
		resp.Model = model
	}
	var text strings.Builder
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "thinking":
			resp.ThinkingBlocks = append(resp.ThinkingBlocks, providers.ThinkingBlock{
				Type: "thinking", Thinking: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			resp.ThinkingBlocks = append(resp.ThinkingBlocks, providers.ThinkingBlock{
				Type: "redacted_thinking", Data: b.Data})
		case "tool_use":
			resp.ToolCalls = append(resp.ToolCalls, providers.NewToolCallRequest(b.ID, b.Name, string(b.Input)))
		}
	}
	resp.Content = text.String()
	resp.FinishReason = stopReason(msg.StopReason, len(resp.ToolCalls) > 0)
	resp.Usage = usageOf(msg.Usage)
	return resp
}

// usageOf reports prompt tokens the OpenAI way, cached ones included:
// Anthropic's input_tokens counts only the uncached part.
func usageOf(u wireUsage) providers.Usage {
	in, cacheRead, cacheWrite := count(u.InputTokens), count(u.CacheReadInputTokens), count(u.CacheCreationInputTokens)
	out := providers.Usage{
		PromptTokens:     in + cacheRead + cacheWrite,
		CompletionTokens: count(u.OutputTokens),
		CacheReadTokens:  cacheRead,
		CacheWriteTokens: cacheWrite,
	}
	out.TotalTokens = out.PromptTokens + out.CompletionTokens
	return out
}

func count(n *int) int {
	if n == nil {
		return 0
	}
	return *n
}

func stopReason(r string, hasToolCalls bool) string {
	switch r {
	case "tool_use":
		return providers.FinishToolCalls
	case "max_tokens", "model_context_window_exceeded":
		return providers.FinishLength
	case "refusal":
		return providers.FinishContentFilter
	}
	if hasToolCalls {
		return providers.FinishToolCalls
	}
	return providers.FinishStop
}
