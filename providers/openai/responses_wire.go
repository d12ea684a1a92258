package openai

import "encoding/json"

// The Responses API wire format, as much of it as we send and read.

type responsesRequest struct {
	Model        string `json:"model"`
	Input        []any  `json:"input"`
	Instructions string `json:"instructions,omitempty"`
	// Store is always sent false: we run stateless.
	Store           bool                `json:"store"`
	Include         []string            `json:"include"`
	PromptCacheKey  string              `json:"prompt_cache_key,omitempty"`
	MaxOutputTokens int                 `json:"max_output_tokens,omitempty"`
	Temperature     *float64            `json:"temperature,omitempty"`
	Reasoning       *responsesReasoning `json:"reasoning,omitempty"`
	Tools           []responsesTool     `json:"tools,omitempty"`
	ToolChoice      any                 `json:"tool_choice,omitempty"`
	Stream          bool                `json:"stream,omitempty"`
}

type responsesReasoning struct {
	Effort  string `json:"effort,omitempty"`
	Summary string `json:"summary,omitempty"`
}

type responsesTool struct {
	Type        string         `json:"type"` // "function"
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters"`
	Strict      bool           `json:"strict"`
}

type responsesNamedToolChoice struct {
	Type string `json:"type"` // "function"
	Name string `json:"name"`
}

// Input items. A message needs no type; the others do.

// inputMessage carries a string or a list of textPart ("input_text") and
// inputImage.
type inputMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

type inputImage struct {
	Type     string `json:"type"` // "input_image"
	Detail   string `json:"detail"`
	ImageURL string `json:"image_url"`
}

type inputReasoning struct {
	Type             string     `json:"type"` // "reasoning"
	ID               string     `json:"id"`
	EncryptedContent string     `json:"encrypted_content,omitempty"`
	Summary          []textPart `json:"summary"` // "summary_text"
}

type inputFunctionCall struct {
	Type      string `json:"type"` // "function_call"
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type inputFunctionCallOutput struct {
	Type   string `json:"type"` // "function_call_output"
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

// responseObject is a whole response: the non-streaming answer, and the
// payload of response.completed, .incomplete and .failed events.
type responseObject struct {
	Model             string       `json:"model"`
	Status            string       `json:"status"`
	Output            []outputItem `json:"output"`
	IncompleteDetails struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Error struct {
		Code    jsonText `json:"code"`
		Message string   `json:"message"`
	} `json:"error"`
	Usage struct {
		InputTokens        int `json:"input_tokens"`
		OutputTokens       int `json:"output_tokens"`
		TotalTokens        int `json:"total_tokens"`
		InputTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	} `json:"usage"`
}

// outputItem is one output item: a message, a function_call or a
// reasoning item (other types are skipped).
type outputItem struct {
	Type             string   `json:"type"`
	ID               string   `json:"id"`
	CallID           string   `json:"call_id"`
	Name             string   `json:"name"`
	Arguments        jsonText `json:"arguments"`
	EncryptedContent string   `json:"encrypted_content"`
	Summary          []struct {
		Text string `json:"text"`
	} `json:"summary"`
	Content []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
}

// streamEvent is one event of a streamed response; which fields are set
// depends on Type.
type streamEvent struct {
	Type     string          `json:"type"`
	Delta    jsonText        `json:"delta"`
	Item     *outputItem     `json:"item"`
	Response *responseObject `json:"response"`
	// Code and Message are set on an "error" event.
	Code    jsonText `json:"code"`
	Message string   `json:"message"`
	// Error is set when a server reports a failure the chat-completions
	// way inside the stream.
	Error json.RawMessage `json:"error"`
}
