package bedrock

import (
	"encoding/base64"
	"encoding/json"
	"sort"
	"strings"

	"github.com/nanobot-go/nanobot/providers"
)

type converseResponse struct {
	Output struct {
		Message *struct {
			Content []responseBlock `json:"content"`
		} `json:"message"`
	} `json:"output"`
	StopReason string    `json:"stopReason"`
	Usage      wireUsage `json:"usage"`
}

type responseBlock struct {
	Text    *string `json:"text"`
	ToolUse *struct {
		ToolUseID string          `json:"toolUseId"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	} `json:"toolUse"`
	ReasoningContent *reasoningContent `json:"reasoningContent"`
}

type wireUsage struct {
	InputTokens           int `json:"inputTokens"`
	OutputTokens          int `json:"outputTokens"`
	TotalTokens           int `json:"totalTokens"`
	CacheReadInputTokens  int `json:"cacheReadInputTokens"`
	CacheWriteInputTokens int `json:"cacheWriteInputTokens"`
}

// usage reports prompt tokens the OpenAI way, cached ones included:
// Bedrock's inputTokens counts only the uncached part.
func (u wireUsage) usage() providers.Usage {
	out := providers.Usage{
		PromptTokens:     u.InputTokens + u.CacheReadInputTokens + u.CacheWriteInputTokens,
		CompletionTokens: u.OutputTokens,
		CacheReadTokens:  u.CacheReadInputTokens,
		CacheWriteTokens: u.CacheWriteInputTokens,
	}
	out.TotalTokens = out.PromptTokens + out.CompletionTokens
	return out
}

// stopReasons maps Converse's stopReason to ours.
var stopReasons = providers.FinishReasons{
	"tool_use":                      providers.FinishToolCalls,
	"max_tokens":                    providers.FinishLength,
	"model_context_window_exceeded": providers.FinishLength,
	"guardrail_intervened":          providers.FinishContentFilter,
	"content_filtered":              providers.FinishContentFilter,
}

func thinkingBlock(rc *reasoningContent) (providers.ThinkingBlock, bool) {
	switch {
	case rc == nil:
		return providers.ThinkingBlock{}, false
	case rc.ReasoningText != nil:
		return providers.ThinkingBlock{Type: "thinking", Thinking: rc.ReasoningText.Text, Signature: rc.ReasoningText.Signature}, true
	case len(rc.RedactedContent) > 0:
		return providers.ThinkingBlock{Type: "redacted_thinking", Data: base64.StdEncoding.EncodeToString(rc.RedactedContent)}, true
	}
	return providers.ThinkingBlock{}, false
}

func (r *converseResponse) response(model string) *providers.LLMResponse {
	out := &providers.LLMResponse{Model: model, Usage: r.Usage.usage()}
	var txt strings.Builder
	if r.Output.Message != nil {
		for _, b := range r.Output.Message.Content {
			switch {
			case b.Text != nil:
				txt.WriteString(*b.Text)
			case b.ToolUse != nil:
				out.ToolCalls = append(out.ToolCalls, providers.NewToolCallRequest(b.ToolUse.ToolUseID, b.ToolUse.Name, string(b.ToolUse.Input)))
			case b.ReasoningContent != nil:
				if tb, ok := thinkingBlock(b.ReasoningContent); ok {
					out.ThinkingBlocks = append(out.ThinkingBlocks, tb)
				}
			}
		}
	}
	out.Content = txt.String()
	out.FinishReason = stopReasons.Of(r.StopReason, len(out.ToolCalls) > 0)
	return out
}

// Stream events (the payloads of ConverseStream's event-stream messages).

type blockStartEvent struct {
	ContentBlockIndex int `json:"contentBlockIndex"`
	Start             struct {
		ToolUse *struct {
			ToolUseID string `json:"toolUseId"`
			Name      string `json:"name"`
		} `json:"toolUse"`
	} `json:"start"`
}

type blockDeltaEvent struct {
	ContentBlockIndex int `json:"contentBlockIndex"`
	Delta             struct {
		Text    *string `json:"text"`
		ToolUse *struct {
			Input string `json:"input"`
		} `json:"toolUse"`
		ReasoningContent *struct {
			Text            string `json:"text"`
			Signature       string `json:"signature"`
			RedactedContent []byte `json:"redactedContent"`
		} `json:"reasoningContent"`
	} `json:"delta"`
}

type messageStopEvent struct {
	StopReason string `json:"stopReason"`
}

type metadataEvent struct {
	Usage wireUsage `json:"usage"`
}

// streamBlock accumulates one content block of a stream.
type streamBlock struct {
	text      strings.Builder
	toolID    string
	toolName  string
	toolInput strings.Builder
	isTool    bool
	reasoning strings.Builder
	signature string
	redacted  []byte
}

// accumulator builds the response from stream events.
type accumulator struct {
	blocks  map[int]*streamBlock
	stop    string
	usage   wireUsage
	stopped bool
}

func (a *accumulator) block(i int) *streamBlock {
	if a.blocks == nil {
		a.blocks = map[int]*streamBlock{}
	}
	b := a.blocks[i]
	if b == nil {
		b = &streamBlock{}
		a.blocks[i] = b
	}
	return b
}

func (a *accumulator) response(model string) *providers.LLMResponse {
	out := &providers.LLMResponse{Model: model, Usage: a.usage.usage()}
	idx := make([]int, 0, len(a.blocks))
	for i := range a.blocks {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var txt strings.Builder
	for _, i := range idx {
		b := a.blocks[i]
		switch {
		case b.isTool:
			out.ToolCalls = append(out.ToolCalls, providers.NewToolCallRequest(b.toolID, b.toolName, b.toolInput.String()))
		case b.reasoning.Len() > 0 || b.signature != "":
			out.ThinkingBlocks = append(out.ThinkingBlocks, providers.ThinkingBlock{Type: "thinking", Thinking: b.reasoning.String(), Signature: b.signature})
		case len(b.redacted) > 0:
			out.ThinkingBlocks = append(out.ThinkingBlocks, providers.ThinkingBlock{Type: "redacted_thinking", Data: base64.StdEncoding.EncodeToString(b.redacted)})
		default:
			txt.WriteString(b.text.String())
		}
	}
	out.Content = txt.String()
	out.FinishReason = stopReasons.Of(a.stop, len(out.ToolCalls) > 0)
	return out
}
