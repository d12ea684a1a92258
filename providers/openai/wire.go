package openai

import (
	"bytes"
	"encoding/json"
)

// The chat-completions wire format, as much of it as we send and read.
// Unknown response fields are ignored; a field of an unexpected JSON type
// is skipped rather than failing the whole response (see wire.DecodeLenient),
// which is how the official SDK treated servers that bend the format.

type chatRequest struct {
	Model               string         `json:"model"`
	Messages            []chatMessage  `json:"messages"`
	MaxTokens           int            `json:"max_tokens,omitempty"`
	MaxCompletionTokens int            `json:"max_completion_tokens,omitempty"`
	Temperature         *float64       `json:"temperature,omitempty"`
	ReasoningEffort     string         `json:"reasoning_effort,omitempty"`
	Tools               []chatTool     `json:"tools,omitempty"`
	ToolChoice          any            `json:"tool_choice,omitempty"`
	Stream              bool           `json:"stream,omitempty"`
	StreamOptions       *streamOptions `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// chatMessage is one request message. Content is a string or a
// list of textPart and imagePart; nil leaves it out (an assistant turn of tool calls only).
type chatMessage struct {
	Role       string         `json:"role"`
	Content    any            `json:"content,omitempty"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	// ReasoningContent goes back to DeepSeek-style servers on the turn that
	// produced tool calls.
	ReasoningContent string `json:"reasoning_content,omitempty"`
}

// textPart is a typed piece of text; both APIs use the shape: "text" in
// chat messages, "input_text" and "summary_text" in responses input.
type textPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type imagePart struct {
	Type     string   `json:"type"` // "image_url"
	ImageURL imageURL `json:"image_url"`
}

type imageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function functionDecl `json:"function"`
}

type functionDecl struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitzero"`
}

type namedToolChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// chatCompletion is a response body or, with Delta instead of Message,
// one stream chunk.
type chatCompletion struct {
	Model string `json:"model"`
	// SystemFingerprint names the server build; Ollama sends "fp_ollama".
	SystemFingerprint string       `json:"system_fingerprint"`
	Choices           []chatChoice `json:"choices"`
	// Usage is nil when the server sent none (every chunk but the last).
	Usage *chatUsage `json:"usage"`
	// Error is set on an in-band error event of a stream.
	Error json.RawMessage `json:"error"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      responseMessage `json:"message"`
	Delta        responseMessage `json:"delta"`
	FinishReason string          `json:"finish_reason"`
}

type responseMessage struct {
	Content jsonText `json:"content"`
	Refusal string   `json:"refusal"`
	// reasoning_content (DeepSeek, Qwen, Kimi, vLLM) or reasoning
	// (OpenRouter); raw because some servers put an object there.
	ReasoningContent json.RawMessage    `json:"reasoning_content"`
	Reasoning        json.RawMessage    `json:"reasoning"`
	ToolCalls        []responseToolCall `json:"tool_calls"`
}

type responseToolCall struct {
	// Index orders the fragments of a streamed call.
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string   `json:"name"`
		Arguments jsonText `json:"arguments"`
	} `json:"function"`
}

type chatUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens     int `json:"cached_tokens"`
		CacheWriteTokens int `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	// PromptCacheHitTokens is how DeepSeek reports its context cache.
	PromptCacheHitTokens int `json:"prompt_cache_hit_tokens"`
}

// jsonText reads a JSON string as its value and anything else but null as
// its JSON text: content sent as an array of parts, tool arguments sent as
// an object instead of a string.
type jsonText string

func (t *jsonText) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || string(b) == "null":
		*t = ""
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = jsonText(s)
	case b[0] == '[':
		// Content parts: keep their text, in order.
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(b, &parts) == nil {
			var sb []byte
			for _, p := range parts {
				if p.Type == "" || p.Type == "text" || p.Type == "output_text" {
					sb = append(sb, p.Text...)
				}
			}
			*t = jsonText(sb)
			return nil
		}
		*t = jsonText(b)
	default:
		*t = jsonText(b)
	}
	return nil
}

// rawString decodes a raw JSON value that should be a string; anything
// else reads as "".
func rawString(raw json.RawMessage) string {
	if len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// present reports whether a raw JSON field was sent with a non-null value.
func present(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && string(raw) != "null"
}
