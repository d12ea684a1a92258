package anthropic

import (
	"strings"

	ant "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/nanobot-go/nanobot/providers"
)

// parseMessage converts a complete (or fully accumulated) message.
// streamedInputs holds, by block index, the tool input JSON as streamed:
// the SDK's accumulator empties input that is not valid JSON, and a broken
// input must reach the repair step, not vanish.
func parseMessage(msg *ant.Message, model string, streamedInputs map[int]*strings.Builder) *providers.LLMResponse {
	resp := &providers.LLMResponse{Model: string(msg.Model)}
	if resp.Model == "" {
		resp.Model = model
	}
	var text strings.Builder
	for i, b := range msg.Content {
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
			input := string(b.Input)
			if streamed, ok := streamedInputs[i]; ok {
				input = streamed.String()
			}
			resp.ToolCalls = append(resp.ToolCalls, providers.NewToolCallRequest(b.ID, b.Name, input))
		}
	}
	resp.Content = text.String()
	resp.FinishReason = stopReason(msg.StopReason, len(resp.ToolCalls) > 0)
	resp.Usage = usageOf(msg.Usage)
	return resp
}

// usageOf reports prompt tokens the OpenAI way, cached ones included:
// Anthropic's input_tokens counts only the uncached part.
func usageOf(u ant.Usage) providers.Usage {
	out := providers.Usage{
		PromptTokens:     int(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens),
		CompletionTokens: int(u.OutputTokens),
		CacheReadTokens:  int(u.CacheReadInputTokens),
		CacheWriteTokens: int(u.CacheCreationInputTokens),
	}
	out.TotalTokens = out.PromptTokens + out.CompletionTokens
	return out
}

func stopReason(r ant.StopReason, hasToolCalls bool) string {
	switch r {
	case ant.StopReasonToolUse:
		return providers.FinishToolCalls
	case ant.StopReasonMaxTokens, ant.StopReasonModelContextWindowExceeded:
		return providers.FinishLength
	case ant.StopReasonRefusal:
		return providers.FinishContentFilter
	}
	if hasToolCalls {
		return providers.FinishToolCalls
	}
	return providers.FinishStop
}
