package providertest

import "time"

// responsesItems is the output array of a Responses API reply: a
// reasoning item (when Reasoning or Encrypted is set), the message, then
// one function_call item per tool call.
func responsesItems(r Reply) []map[string]any {
	var items []map[string]any
	if r.Reasoning != "" || r.Encrypted != "" {
		it := map[string]any{"id": nextID("rs_"), "type": "reasoning", "summary": []any{}}
		if r.Reasoning != "" {
			it["summary"] = []any{map[string]any{"type": "summary_text", "text": r.Reasoning}}
		}
		if r.Encrypted != "" {
			it["encrypted_content"] = r.Encrypted
		}
		items = append(items, it)
	}
	if r.Text != "" || len(r.ToolCalls) == 0 {
		items = append(items, map[string]any{
			"id": nextID("msg_"), "type": "message", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": r.Text, "annotations": []any{}}},
		})
	}
	for i, tc := range r.ToolCalls {
		items = append(items, map[string]any{
			"id": nextID("fc_"), "type": "function_call", "status": "completed",
			"call_id": callID(tc, i), "name": tc.Name, "arguments": tc.Arguments,
		})
	}
	return items
}

func responsesUsage(u Usage) map[string]any {
	return map[string]any{
		"input_tokens":          u.PromptTokens,
		"input_tokens_details":  map[string]any{"cached_tokens": u.CacheReadTokens},
		"output_tokens":         u.CompletionTokens,
		"output_tokens_details": map[string]any{"reasoning_tokens": u.ReasoningTokens},
		"total_tokens":          u.PromptTokens + u.CompletionTokens,
	}
}

// responsesObject is the response object; status is completed, or
// incomplete for FinishReason length or content_filter.
func responsesObject(r Reply, id string, created int64, output []map[string]any, status string) map[string]any {
	obj := map[string]any{
		"id": id, "object": "response", "created_at": created, "model": r.Model, "status": status,
		"output": output, "error": nil, "incomplete_details": nil,
	}
	if status == "completed" || status == "incomplete" {
		if !r.NoUsage {
			obj["usage"] = responsesUsage(r.usage())
		}
		switch r.FinishReason {
		case "length":
			obj["status"] = "incomplete"
			obj["incomplete_details"] = map[string]any{"reason": "max_output_tokens"}
		case "content_filter":
			obj["status"] = "incomplete"
			obj["incomplete_details"] = map[string]any{"reason": "content_filter"}
		}
	}
	return obj
}

// responsesBody is the non-streaming response.
func responsesBody(r Reply) map[string]any {
	return responsesObject(r, nextID("resp_"), time.Now().Unix(), responsesItems(r), "completed")
}

// responsesStream is the event sequence of a streamed response, as OpenAI
// sends it: response.created, response.in_progress, then per output item
// response.output_item.added, its deltas (reasoning_summary_text.delta,
// output_text.delta, function_call_arguments.delta) and done events, and
// response.output_item.done carrying the complete item; last
// response.completed with the whole response and usage.
func responsesStream(r Reply) []event {
	id, created := nextID("resp_"), time.Now().Unix()
	seq := 0
	ev := func(typ string, fields map[string]any) event {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		return namedEvent(typ, fields)
	}
	events := []event{
		ev("response.created", map[string]any{"response": responsesObject(r, id, created, []map[string]any{}, "in_progress")}),
		ev("response.in_progress", map[string]any{"response": responsesObject(r, id, created, []map[string]any{}, "in_progress")}),
	}
	items := responsesItems(r)
	for idx, it := range items {
		itemID := it["id"]
		added := map[string]any{}
		for k, v := range it {
			added[k] = v
		}
		switch it["type"] {
		case "reasoning":
			delete(added, "encrypted_content") // only the done item carries it whole
			added["summary"] = []any{}
		case "message":
			added["content"] = []any{}
			added["status"] = "in_progress"
		case "function_call":
			added["arguments"] = ""
			added["status"] = "in_progress"
		}
		events = append(events, ev("response.output_item.added", map[string]any{"output_index": idx, "item": added}))
		switch it["type"] {
		case "reasoning":
			if r.Reasoning != "" {
				events = append(events, ev("response.reasoning_summary_part.added", map[string]any{
					"item_id": itemID, "output_index": idx, "summary_index": 0, "part": map[string]any{"type": "summary_text", "text": ""}}))
				for _, piece := range split(r.Reasoning, r.chunks()) {
					events = append(events, ev("response.reasoning_summary_text.delta", map[string]any{
						"item_id": itemID, "output_index": idx, "summary_index": 0, "delta": piece}))
				}
				events = append(events, ev("response.reasoning_summary_text.done", map[string]any{
					"item_id": itemID, "output_index": idx, "summary_index": 0, "text": r.Reasoning}))
			}
		case "message":
			events = append(events, ev("response.content_part.added", map[string]any{
				"item_id": itemID, "output_index": idx, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}}))
			for _, piece := range split(r.Text, r.chunks()) {
				events = append(events, ev("response.output_text.delta", map[string]any{
					"item_id": itemID, "output_index": idx, "content_index": 0, "delta": piece, "logprobs": []any{}}))
			}
			events = append(events, ev("response.output_text.done", map[string]any{
				"item_id": itemID, "output_index": idx, "content_index": 0, "text": r.Text, "logprobs": []any{}}))
		case "function_call":
			args, _ := it["arguments"].(string)
			for _, piece := range split(args, r.chunks()) {
				events = append(events, ev("response.function_call_arguments.delta", map[string]any{
					"item_id": itemID, "output_index": idx, "delta": piece}))
			}
			events = append(events, ev("response.function_call_arguments.done", map[string]any{
				"item_id": itemID, "output_index": idx, "arguments": args}))
		}
		events = append(events, ev("response.output_item.done", map[string]any{"output_index": idx, "item": it}))
	}
	final := responsesObject(r, id, created, items, "completed")
	typ := "response.completed"
	if final["status"] == "incomplete" {
		typ = "response.incomplete"
	}
	return append(events, ev(typ, map[string]any{"response": final}))
}
