// The runner's hook points: around each model call and each tool call.
// The plain paths (callModel, runTool) are taken when no hook listens, so
// a gateway without hooks pays nothing here.

package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/nanobot-go/nanobot/providers"
)

// callHooked is a model call with the before_model and after_model hooks.
func (r *Runner) callHooked(ctx context.Context, conv []providers.Message, defs []providers.ToolDefinition, toolChoice string, emit func(Event)) (*providers.LLMResponse, error) {
	if hooking(r.Hooks, HookBeforeModel) {
		v := runHook(ctx, r.Hooks, HookEvent{Point: HookBeforeModel, Data: map[string]any{
			"model": r.Model, "messages": len(conv), "prompt": lastUserText(conv), "tools": len(defs),
		}})
		if v.Veto {
			return nil, &HookVetoError{Point: HookBeforeModel, Reason: v.Reason}
		}
		if note, ok := hookString(v, "context"); ok && strings.TrimSpace(note) != "" {
			// For this call only: the note is not part of the run's
			// messages, so it is neither stored nor sent again.
			conv = append(conv[:len(conv):len(conv)], providers.Message{Role: providers.RoleUser, Content: hookNote(note)})
		}
	}
	resp, err := r.callModel(ctx, conv, defs, toolChoice, emit)
	if hooking(r.Hooks, HookAfterModel) {
		data := map[string]any{"model": r.Model}
		if err != nil {
			data["error"] = r.Redact.Secrets(err.Error())
		}
		if resp != nil {
			data["content"] = resp.Content
			calls := make([]map[string]any, 0, len(resp.ToolCalls))
			for _, tc := range resp.ToolCalls {
				calls = append(calls, map[string]any{"name": tc.Name, "arguments": tc.Arguments})
			}
			data["tool_calls"] = calls
			data["prompt_tokens"], data["completion_tokens"] = resp.Usage.PromptTokens, resp.Usage.CompletionTokens
		}
		runHook(ctx, r.Hooks, HookEvent{Point: HookAfterModel, Data: data})
	}
	return resp, err
}

// runToolHooked is a tool call with the before_tool and after_tool hooks.
func (r *Runner) runToolHooked(ctx context.Context, tc providers.ToolCallRequest) outcome {
	if hooking(r.Hooks, HookBeforeTool) && tc.ArgumentsError == "" {
		v := runHook(ctx, r.Hooks, HookEvent{Point: HookBeforeTool, Data: map[string]any{
			"tool": tc.Name, "call_id": tc.ID, "arguments": argsOrEmpty(tc.Arguments),
		}})
		if v.Veto {
			if r.Log != nil {
				r.Log.Info("tool call vetoed by a hook", "tool", tc.Name, "reason", v.Reason)
			}
			reason := v.Reason
			if reason == "" {
				reason = "no reason given"
			}
			return outcome{text: fmt.Sprintf("Error: the owner's hook refused this call of %s: %s\n\nDo not try the same call again; tell the user if it matters.", tc.Name, reason), failed: true}
		}
		if v.Data != nil {
			if args, ok := v.Data["arguments"].(map[string]any); ok {
				tc.Arguments = args
			}
		}
	}
	o := r.runTool(ctx, tc)
	if hooking(r.Hooks, HookAfterTool) {
		v := runHook(ctx, r.Hooks, HookEvent{Point: HookAfterTool, Data: map[string]any{
			"tool": tc.Name, "call_id": tc.ID, "arguments": argsOrEmpty(tc.Arguments), "result": o.text, "failed": o.failed,
		}})
		if text, ok := hookString(v, "result"); ok {
			// Masked like the tool's own result: a hook cannot put back
			// a secret the registry took out.
			o.text = r.Redact.Secrets(text)
		}
	}
	return o
}

func argsOrEmpty(args map[string]any) map[string]any {
	if args == nil {
		return map[string]any{}
	}
	return args
}

// lastUserText is the text of the conversation's latest user message.
func lastUserText(conv []providers.Message) string {
	for i := len(conv) - 1; i >= 0; i-- {
		if conv[i].Role == providers.RoleUser {
			return conv[i].Text()
		}
	}
	return ""
}
