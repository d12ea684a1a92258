package anthropic

import "encoding/json"

// The Messages API wire format, as much of it as we send and read. Unknown
// response fields are ignored; a field of an unexpected JSON type is
// skipped rather than failing the whole response (see wire.DecodeLenient).

type messageRequest struct {
	Model      string          `json:"model"`
	MaxTokens  int             `json:"max_tokens"`
	System     []*textBlock    `json:"system,omitempty"`
	Messages   []wireMessage   `json:"messages"`
	Tools      []wireTool      `json:"tools,omitempty"`
	ToolChoice *wireToolChoice `json:"tool_choice,omitempty"`
	Thinking   *thinkingConfig `json:"thinking,omitempty"`
	Stream     bool            `json:"stream,omitempty"`
}

type wireMessage struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

// block is one request content block. markCache puts a cache_control
// breakpoint on it and reports false for blocks that cannot carry one.
type block interface {
	markCache() bool
}

type cacheControl struct {
	Type string `json:"type"` // "ephemeral"
}

var ephemeral = &cacheControl{Type: "ephemeral"}

type textBlock struct {
	Type         string        `json:"type"` // "text"
	Text         string        `json:"text"`
	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

func newText(s string) *textBlock { return &textBlock{Type: "text", Text: s} }

type imageBlock struct {
	Type         string        `json:"type"` // "image"
	Source       imageSource   `json:"source"`
	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

// imageSource is {"type":"base64","media_type":...,"data":...} or
// {"type":"url","url":...}.
type imageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type toolUseBlock struct {
	Type         string         `json:"type"` // "tool_use"
	ID           string         `json:"id"`
	Name         string         `json:"name"`
	Input        map[string]any `json:"input"`
	CacheControl *cacheControl  `json:"cache_control,omitempty"`
}

// toolResultBlock's Content holds *textBlock and *imageBlock.
type toolResultBlock struct {
	Type         string        `json:"type"` // "tool_result"
	ToolUseID    string        `json:"tool_use_id"`
	Content      []block       `json:"content"`
	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

type thinkingBlock struct {
	Type      string `json:"type"` // "thinking"
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type redactedThinkingBlock struct {
	Type string `json:"type"` // "redacted_thinking"
	Data string `json:"data"`
}

func (b *textBlock) markCache() bool       { b.CacheControl = ephemeral; return true }
func (b *imageBlock) markCache() bool      { b.CacheControl = ephemeral; return true }
func (b *toolUseBlock) markCache() bool    { b.CacheControl = ephemeral; return true }
func (b *toolResultBlock) markCache() bool { b.CacheControl = ephemeral; return true }

// Thinking blocks cannot carry a breakpoint.
func (*thinkingBlock) markCache() bool         { return false }
func (*redactedThinkingBlock) markCache() bool { return false }

type wireTool struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	InputSchema map[string]any `json:"input_schema"`
}

// wireToolChoice is {"type":"auto"|"none"|"any"} or {"type":"tool","name":...}.
type wireToolChoice struct {
	Type string `json:"type"`
	Name string `json:"name,omitempty"`
}

type thinkingConfig struct {
	Type         string `json:"type"` // "enabled"
	BudgetTokens int    `json:"budget_tokens"`
}

// messageResponse is a response body, and the message of a stream's
// message_start event.
type messageResponse struct {
	Model      string          `json:"model"`
	Content    []responseBlock `json:"content"`
	StopReason string          `json:"stop_reason"`
	Usage      wireUsage       `json:"usage"`
}

// responseBlock is any content block of a response; Type says which
// fields are set.
type responseBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"` // redacted_thinking
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// wireUsage counts tokens. In a message_delta event a count that is
// absent keeps what message_start said, hence the pointers.
type wireUsage struct {
	InputTokens              *int `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
}

// streamEvent is one event of a stream; Type says which fields are set.
type streamEvent struct {
	Type    string           `json:"type"`
	Message *messageResponse `json:"message"` // message_start
	Index   int              `json:"index"`   // content_block_*
	// ContentBlock opens a block (content_block_start).
	ContentBlock responseBlock `json:"content_block"`
	// Delta is a content_block_delta's piece or a message_delta's stop reason.
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *wireUsage `json:"usage"` // message_delta
}
