package providertest

import (
	"encoding/json"
	"fmt"
)

func (r Reply) anthropicStop() string {
	switch r.openAIFinish() {
	case "tool_calls":
		return "tool_use"
	case "length":
		return "max_tokens"
	case "content_filter":
		return "refusal"
	default:
		return "end_turn"
	}
}

func toolUseID(tc ToolCall, i int) string {
	if tc.ID != "" {
		return tc.ID
	}
	return fmt.Sprintf("toolu_%d", i+1)
}

func anthropicUsage(u Usage) map[string]any {
	return map[string]any{
		"input_tokens":                u.PromptTokens,
		"output_tokens":               u.CompletionTokens,
		"cache_read_input_tokens":     u.CacheReadTokens,
		"cache_creation_input_tokens": u.CacheWriteTokens,
	}
}

// anthropicMessage is the non-streaming message body.
func anthropicMessage(r Reply) map[string]any {
	var content []any
	for _, th := range r.Thinking {
		if th.Redacted != "" {
			content = append(content, map[string]any{"type": "redacted_thinking", "data": th.Redacted})
			continue
		}
		content = append(content, map[string]any{"type": "thinking", "thinking": th.Text, "signature": th.Signature})
	}
	if r.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": r.Text})
	}
	for i, tc := range r.ToolCalls {
		var input any = map[string]any{}
		if json.Valid([]byte(tc.Arguments)) {
			input = json.RawMessage(tc.Arguments)
		}
		content = append(content, map[string]any{"type": "tool_use", "id": toolUseID(tc, i), "name": tc.Name, "input": input})
	}
	if content == nil {
		content = []any{}
	}
	return map[string]any{
		"id": nextID("msg_"), "type": "message", "role": "assistant", "model": r.Model,
		"content": content, "stop_reason": r.anthropicStop(), "stop_sequence": nil,
		"usage": anthropicUsage(r.usage()),
	}
}

// anthropicStream is the event sequence of a streamed message. Usage is
// split as the API does: input and cache counts in message_start, the
// output count in message_delta.
func anthropicStream(r Reply) []event {
	u := r.usage()
	start := anthropicUsage(Usage{PromptTokens: u.PromptTokens, CompletionTokens: 1,
		CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens})
	events := []event{
		namedEvent("message_start", map[string]any{"type": "message_start", "message": map[string]any{
			"id": nextID("msg_"), "type": "message", "role": "assistant", "model": r.Model,
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": start,
		}}),
		namedEvent("ping", map[string]any{"type": "ping"}),
	}
	index := 0
	block := func(startBlock map[string]any, deltas []map[string]any) {
		events = append(events, namedEvent("content_block_start", map[string]any{
			"type": "content_block_start", "index": index, "content_block": startBlock}))
		for _, d := range deltas {
			events = append(events, namedEvent("content_block_delta", map[string]any{
				"type": "content_block_delta", "index": index, "delta": d}))
		}
		events = append(events, namedEvent("content_block_stop", map[string]any{"type": "content_block_stop", "index": index}))
		index++
	}
	for _, th := range r.Thinking {
		if th.Redacted != "" {
			block(map[string]any{"type": "redacted_thinking", "data": th.Redacted}, nil)
			continue
		}
		var deltas []map[string]any
		for _, piece := range split(th.Text, r.chunks()) {
			deltas = append(deltas, map[string]any{"type": "thinking_delta", "thinking": piece})
		}
		if th.Signature != "" {
			deltas = append(deltas, map[string]any{"type": "signature_delta", "signature": th.Signature})
		}
		block(map[string]any{"type": "thinking", "thinking": "", "signature": ""}, deltas)
	}
	if r.Text != "" {
		var deltas []map[string]any
		for _, piece := range split(r.Text, r.chunks()) {
			deltas = append(deltas, map[string]any{"type": "text_delta", "text": piece})
		}
		block(map[string]any{"type": "text", "text": ""}, deltas)
	}
	for i, tc := range r.ToolCalls {
		var deltas []map[string]any
		for _, piece := range split(tc.Arguments, r.chunks()) {
			deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": piece})
		}
		block(map[string]any{"type": "tool_use", "id": toolUseID(tc, i), "name": tc.Name, "input": map[string]any{}}, deltas)
	}
	events = append(events,
		namedEvent("message_delta", map[string]any{
			"type":  "message_delta",
			"delta": map[string]any{"stop_reason": r.anthropicStop(), "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": u.CompletionTokens},
		}),
		namedEvent("message_stop", map[string]any{"type": "message_stop"}),
	)
	return events
}
