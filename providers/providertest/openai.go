package providertest

import (
	"fmt"
	"sync/atomic"
	"time"
)

var idSeq atomic.Int64

func nextID(prefix string) string { return fmt.Sprintf("%s%d", prefix, idSeq.Add(1)) }

func (r Reply) openAIFinish() string {
	if r.FinishReason != "" {
		return r.FinishReason
	}
	if len(r.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func callID(tc ToolCall, i int) string {
	if tc.ID != "" {
		return tc.ID
	}
	return fmt.Sprintf("call_%d", i+1)
}

func openAIUsage(u Usage) map[string]any {
	return map[string]any{
		"prompt_tokens":     u.PromptTokens,
		"completion_tokens": u.CompletionTokens,
		"total_tokens":      u.PromptTokens + u.CompletionTokens,
		"prompt_tokens_details": map[string]any{
			"cached_tokens":      u.CacheReadTokens,
			"cache_write_tokens": u.CacheWriteTokens,
		},
		"completion_tokens_details": map[string]any{
			"reasoning_tokens": u.ReasoningTokens,
		},
	}
}

// openAICompletion is the non-streaming chat.completion body.
func openAICompletion(r Reply) map[string]any {
	msg := map[string]any{"role": "assistant", "content": r.Text}
	if r.Text == "" && len(r.ToolCalls) > 0 {
		msg["content"] = nil
	}
	if r.Reasoning != "" {
		msg["reasoning_content"] = r.Reasoning
	}
	if len(r.ToolCalls) > 0 {
		calls := make([]any, len(r.ToolCalls))
		for i, tc := range r.ToolCalls {
			calls[i] = map[string]any{
				"id": callID(tc, i), "type": "function",
				"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments},
			}
		}
		msg["tool_calls"] = calls
	}
	out := map[string]any{
		"id": nextID("chatcmpl-"), "object": "chat.completion", "created": time.Now().Unix(), "model": r.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": r.openAIFinish(), "logprobs": nil}},
		"usage":   openAIUsage(r.usage()),
	}
	if r.NoUsage {
		delete(out, "usage")
	}
	return out
}

// openAIStream is the chunk sequence of a streamed completion: role,
// reasoning pieces, text pieces, each tool call as a head (id, name) and
// argument fragments, the finish chunk, the usage chunk and [DONE].
func openAIStream(r Reply) []event {
	id, created := nextID("chatcmpl-"), time.Now().Unix()
	chunk := func(delta map[string]any, finish any) event {
		return dataEvent(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": r.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": nil}},
		})
	}
	events := []event{chunk(map[string]any{"role": "assistant", "content": ""}, nil)}
	for _, piece := range split(r.Reasoning, r.chunks()) {
		events = append(events, chunk(map[string]any{"reasoning_content": piece}, nil))
	}
	for _, piece := range split(r.Text, r.chunks()) {
		events = append(events, chunk(map[string]any{"content": piece}, nil))
	}
	for i, tc := range r.ToolCalls {
		events = append(events, chunk(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": callID(tc, i), "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""},
		}}}, nil))
		for _, piece := range split(tc.Arguments, r.chunks()) {
			events = append(events, chunk(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": piece},
			}}}, nil))
		}
	}
	events = append(events, chunk(map[string]any{}, r.openAIFinish()))
	if !r.NoUsage {
		events = append(events, dataEvent(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": r.Model,
			"choices": []any{}, "usage": openAIUsage(r.usage()),
		}))
	}
	return append(events, event{data: "[DONE]"})
}
