package openai

import (
	"slices"
	"strings"

	"github.com/nanobot-go/nanobot/providers"
)

// parseCompletion converts a non-streaming response.
// tools says whether the request offered tools (see ollamaEchoed).
func (p *Provider) parseCompletion(cc *chatCompletion, model string, tools bool) (*providers.LLMResponse, error) {
	if len(cc.Choices) == 0 {
		return nil, &providers.Error{Provider: p.name, Message: "response has no choices"}
	}
	choice := cc.Choices[0]
	msg := choice.Message
	resp := &providers.LLMResponse{
		Content:          string(msg.Content),
		ReasoningContent: reasoningOf(&msg),
		Usage:            usageOf(cc.Usage),
		Model:            firstNonEmpty(cc.Model, model),
	}
	if tools && cc.SystemFingerprint == ollamaFingerprint {
		resp.Content, _ = ollamaEchoed(resp.Content)
	}
	for _, tc := range msg.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		resp.ToolCalls = append(resp.ToolCalls, providers.NewToolCallRequest(tc.ID, tc.Function.Name, string(tc.Function.Arguments)))
	}
	if resp.Content == "" && msg.Refusal != "" {
		resp.Content = msg.Refusal
	}
	resp.FinishReason = finishReasons.Of(choice.FinishReason, len(resp.ToolCalls) > 0)
	return resp, nil
}

// reasoningOf reads the reasoning text servers add beside content:
// reasoning_content (DeepSeek, Qwen, Kimi, vLLM) or reasoning (OpenRouter).
func reasoningOf(m *responseMessage) string {
	if r := rawString(m.ReasoningContent); r != "" {
		return r
	}
	return rawString(m.Reasoning)
}

// usageOf converts the usage object; nil (none sent) is zero usage.
func usageOf(u *chatUsage) providers.Usage {
	if u == nil {
		return providers.Usage{}
	}
	out := providers.Usage{
		PromptTokens:     u.PromptTokens,
		CompletionTokens: u.CompletionTokens,
		TotalTokens:      u.TotalTokens,
		CacheReadTokens:  u.PromptTokensDetails.CachedTokens,
		CacheWriteTokens: u.PromptTokensDetails.CacheWriteTokens,
		ReasoningTokens:  u.CompletionTokensDetails.ReasoningTokens,
	}
	if out.CacheReadTokens == 0 {
		// DeepSeek reports its context cache this way.
		out.CacheReadTokens = u.PromptCacheHitTokens
	}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.PromptTokens + out.CompletionTokens
	}
	return out
}

// finishReasons maps the chat-completions finish_reason (and what
// compatible servers say instead) to ours.
var finishReasons = providers.FinishReasons{
	"tool_calls":     providers.FinishToolCalls,
	"function_call":  providers.FinishToolCalls,
	"length":         providers.FinishLength,
	"max_tokens":     providers.FinishLength,
	"content_filter": providers.FinishContentFilter,
	"safety":         providers.FinishContentFilter,
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// accumulator rebuilds a response from stream chunks. Tool calls arrive as
// fragments keyed by index: the first carries id and name, the rest pieces
// of the argument JSON.
type accumulator struct {
	model     string
	tools     bool // the request offered tools (see isOllamaEcho)
	content   strings.Builder
	reasoning strings.Builder
	refusal   strings.Builder
	calls     []*partialCall
	finish    string
	finished  bool
	usage     providers.Usage
}

type partialCall struct {
	index    int
	id, name string
	args     strings.Builder
}

func newAccumulator(model string, tools bool) *accumulator {
	return &accumulator{model: model, tools: tools}
}

// add folds one chunk in and returns the text it contributed.
func (a *accumulator) add(c *chatCompletion) providers.Delta {
	if c.Model != "" {
		a.model = c.Model
	}
	if c.Usage != nil {
		a.usage = usageOf(c.Usage)
	}
	var d providers.Delta
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // we never ask for n > 1
		}
		if a.tools && ch.FinishReason != "" && c.SystemFingerprint == ollamaFingerprint &&
			isOllamaEcho(a.content.String(), string(ch.Delta.Content)) {
			ch.Delta.Content = ""
		}
		if ch.Delta.Content != "" {
			a.content.WriteString(string(ch.Delta.Content))
			d.Content += string(ch.Delta.Content)
		}
		if ch.Delta.Refusal != "" {
			a.refusal.WriteString(ch.Delta.Refusal)
		}
		if r := reasoningOf(&ch.Delta); r != "" {
			a.reasoning.WriteString(r)
			d.Reasoning += r
		}
		for i := range ch.Delta.ToolCalls {
			a.addToolCall(&ch.Delta.ToolCalls[i])
		}
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
			a.finished = true
		}
	}
	return d
}

func (a *accumulator) addToolCall(tc *responseToolCall) {
	var pc *partialCall
	for _, c := range a.calls {
		if c.index == tc.Index {
			pc = c
		}
	}
	// A new id at a known index is a new call: some servers number every
	// call 0.
	if pc == nil || (tc.ID != "" && pc.id != "" && tc.ID != pc.id) {
		pc = &partialCall{index: tc.Index}
		a.calls = append(a.calls, pc)
	}
	if tc.ID != "" {
		pc.id = tc.ID
	}
	if tc.Function.Name != "" {
		pc.name = tc.Function.Name
	}
	pc.args.WriteString(string(tc.Function.Arguments))
}

func (a *accumulator) response() *providers.LLMResponse {
	resp := &providers.LLMResponse{
		Content:          a.content.String(),
		ReasoningContent: a.reasoning.String(),
		Usage:            a.usage,
		Model:            a.model,
	}
	if resp.Content == "" {
		resp.Content = a.refusal.String()
	}
	calls := slices.Clone(a.calls)
	slices.SortStableFunc(calls, func(x, y *partialCall) int { return x.index - y.index })
	for _, c := range calls {
		resp.ToolCalls = append(resp.ToolCalls, providers.NewToolCallRequest(c.id, c.name, c.args.String()))
	}
	resp.FinishReason = finishReasons.Of(a.finish, len(resp.ToolCalls) > 0)
	return resp
}
