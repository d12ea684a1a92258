// Package providers owns the vendor-neutral LLM contract: the message shape the
// sessions store, the request the agent sends, the one response shape every
// backend returns (LLMResponse), the Provider interface, the Endpoint settings
// every vendor backend's Options embed, the provider registry with
// model->provider matching, the retry policy shared by all backends, and
// the proactive rate limiter (RateLimiters) that holds calls back to the
// configured rpm/tpm and to what the vendors' rate-limit headers allow.
//
// The agent only ever sees these types; which vendor answers is decided here.
//
// Concurrency: the agent calls one Provider from many goroutines at once
// (one per running turn), so every Provider must be safe for concurrent use;
// Stream calls onDelta one call at a time, never concurrently. Retry,
// Fallback and the providers New, NewChain and NewChainOf build are safe for
// concurrent use when the backends they wrap are; RateLimiters and
// RateLimiter are safe for concurrent use.
package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Roles of a Message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one chat message in the OpenAI chat-completions shape. It is also
// the line format of session files, so its JSON form is a stable contract:
// "content" is a string, or an array of parts when Parts is set.
type Message struct {
	Role string
	// Content is the plain text content. Ignored when Parts is non-empty.
	Content string
	// Parts is multimodal content (text and images). When set it is encoded as
	// the "content" array.
	Parts []ContentPart
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall
	// ToolCallID links a tool-result message to its call.
	ToolCallID string
	// Name is the tool name on a tool-result message (optional).
	Name string
	// ReasoningContent is DeepSeek-style reasoning text, replayed when the
	// vendor requires it.
	ReasoningContent string
	// ThinkingBlocks are Anthropic thinking blocks, replayed with signatures.
	ThinkingBlocks []ThinkingBlock
	// ReasoningItems are OpenAI Responses API reasoning items, replayed with
	// their encrypted content (the backend runs with store:false, so the
	// server keeps nothing between calls).
	ReasoningItems []ReasoningItem
	// Timestamp is set when the message is stored (RFC 3339). Backends ignore it.
	Timestamp string
	// InboundID identifies, on a stored user message, the platform message
	// it came from (channel, chat and message id), so that a message
	// delivered again after a crash is recognised as answered. Backends
	// ignore it.
	InboundID string
}

// ContentPart is one element of multimodal content.
type ContentPart struct {
	Type     string    `json:"type"` // "text" or "image_url"
	Text     string    `json:"text,omitempty"`
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// ImageURL carries an image, usually as a data: URL with base64 content.
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// TextPart and ImagePart build content parts.
func TextPart(s string) ContentPart { return ContentPart{Type: "text", Text: s} }

// ImagePart builds an image part from a URL (typically a data: URL).
func ImagePart(url string) ContentPart {
	return ContentPart{Type: "image_url", ImageURL: &ImageURL{URL: url}}
}

// ToolCall is a tool call as stored on an assistant message (OpenAI shape:
// arguments are the raw JSON string the model produced).
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // always "function"
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function part of a ToolCall.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ThinkingBlock is an Anthropic extended-thinking block.
type ThinkingBlock struct {
	Type      string `json:"type"` // "thinking" or "redacted_thinking"
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"` // redacted_thinking payload
}

// ReasoningItem is one reasoning item of the OpenAI Responses API. The
// encrypted content is opaque: it is sent back verbatim on the next call so
// the model keeps its chain of thought across tool calls.
type ReasoningItem struct {
	ID               string   `json:"id"`
	EncryptedContent string   `json:"encrypted_content,omitempty"`
	Summary          []string `json:"summary,omitempty"`
}

// HasImages reports whether the message carries image parts.
func (m Message) HasImages() bool {
	for _, p := range m.Parts {
		if p.Type == "image_url" {
			return true
		}
	}
	return false
}

// Text returns the message's text: Content, or the concatenated text parts.
func (m Message) Text() string {
	if len(m.Parts) == 0 {
		return m.Content
	}
	var s string
	for _, p := range m.Parts {
		if p.Type == "text" {
			if s != "" {
				s += "\n"
			}
			s += p.Text
		}
	}
	return s
}

type messageJSON struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content,omitempty"`
	ToolCalls        []ToolCall      `json:"tool_calls,omitempty"`
	ToolCallID       string          `json:"tool_call_id,omitempty"`
	Name             string          `json:"name,omitempty"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	ThinkingBlocks   []ThinkingBlock `json:"thinking_blocks,omitempty"`
	ReasoningItems   []ReasoningItem `json:"reasoning_items,omitempty"`
	Timestamp        string          `json:"timestamp,omitempty"`
	InboundID        string          `json:"inbound_id,omitempty"`
}

// MarshalJSON encodes the OpenAI shape: content as string or parts array.
func (m Message) MarshalJSON() ([]byte, error) {
	j := messageJSON{
		Role: m.Role, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, Name: m.Name,
		ReasoningContent: m.ReasoningContent, ThinkingBlocks: m.ThinkingBlocks, ReasoningItems: m.ReasoningItems,
		Timestamp: m.Timestamp, InboundID: m.InboundID,
	}
	var err error
	switch {
	case len(m.Parts) > 0:
		j.Content, err = json.Marshal(m.Parts)
	case m.Content != "" || len(m.ToolCalls) == 0:
		// An assistant message with only tool calls omits content; every other
		// message carries a (possibly empty) string.
		j.Content, err = json.Marshal(m.Content)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(j)
}

// UnmarshalJSON accepts content as a string, an array of parts, or null.
func (m *Message) UnmarshalJSON(b []byte) error {
	var j messageJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*m = Message{
		Role: j.Role, ToolCalls: j.ToolCalls, ToolCallID: j.ToolCallID, Name: j.Name,
		ReasoningContent: j.ReasoningContent, ThinkingBlocks: j.ThinkingBlocks, ReasoningItems: j.ReasoningItems,
		Timestamp: j.Timestamp, InboundID: j.InboundID,
	}
	if len(j.Content) == 0 || string(j.Content) == "null" {
		return nil
	}
	switch j.Content[0] {
	case '"':
		return json.Unmarshal(j.Content, &m.Content)
	case '[':
		return json.Unmarshal(j.Content, &m.Parts)
	default:
		return fmt.Errorf("message content: want string or array, got %s", j.Content[:1])
	}
}

// ToolDefinition describes a tool to the model.
type ToolDefinition struct {
	Name        string
	Description string
	Parameters  map[string]any // JSON Schema of the arguments object
}

// ChatRequest is what the agent asks of a provider.
type ChatRequest struct {
	Model    string
	Messages []Message
	Tools    []ToolDefinition
	// ToolChoice: "" or "auto" lets the model choose, "none" disables tools,
	// "required" forces some tool, any other value forces the tool of that name.
	ToolChoice      string
	MaxTokens       int
	Temperature     *float64
	ReasoningEffort string // "", "low", "medium", "high"
	// CacheKey groups requests that share a prompt prefix (the session
	// key), sent as prompt_cache_key where the backend supports it.
	CacheKey string
	// OnWait, when set, is told when a rate limiter holds the call back
	// for d: from the calling goroutine, about every four seconds of a
	// wait (the chat shows typing meanwhile). It is not sent.
	OnWait func(d time.Duration) `json:"-"`
}

// ToolCallRequest is a decoded tool call of a response.
type ToolCallRequest struct {
	ID        string
	Name      string
	Arguments map[string]any
	// RawArguments is the JSON text the model sent (after repair, if any).
	RawArguments string
	// ArgumentsError is set when the arguments could not be decoded even after
	// repair; the agent returns it to the model instead of running the tool.
	ArgumentsError string
}

// Usage is token accounting for one call. PromptTokens includes the
// cached tokens (CacheReadTokens, CacheWriteTokens are parts of it), and
// CompletionTokens includes ReasoningTokens.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
	CacheReadTokens  int
	CacheWriteTokens int
	// ReasoningTokens are the completion tokens the model spent thinking
	// (OpenAI completion_tokens_details.reasoning_tokens; Anthropic does not
	// report them apart).
	ReasoningTokens int
}

// Reported is true when the provider reported any usage.
func (u Usage) Reported() bool { return u != Usage{} }

// Finish reasons.
const (
	FinishStop      = "stop"
	FinishToolCalls = "tool_calls"
	FinishLength    = "length"
	FinishError     = "error"
	// FinishContentFilter: the vendor withheld or cut the answer (OpenAI
	// content_filter, Anthropic refusal).
	FinishContentFilter = "content_filter"
)

// LLMResponse is the one response shape every backend returns.
type LLMResponse struct {
	Content          string
	ToolCalls        []ToolCallRequest
	FinishReason     string
	Usage            Usage
	ReasoningContent string
	ThinkingBlocks   []ThinkingBlock
	// ReasoningItems are the Responses API reasoning items, to store on
	// the assistant message and replay.
	ReasoningItems []ReasoningItem
	// Model is the model that answered (after fallback, the fallback's name).
	Model string
	// Provider names the provider that answered when a fallback chain
	// chose it; "" means the one the caller configured.
	Provider string
}

// Delta is an incremental piece of a streamed response.
type Delta struct {
	Content   string
	Reasoning string
}

// Provider is one LLM backend. Both calls block until the response is complete
// or ctx ends; Stream calls onDelta (from the calling goroutine's stream
// reader, never concurrently) as text arrives.
type Provider interface {
	Chat(ctx context.Context, req ChatRequest) (*LLMResponse, error)
	Stream(ctx context.Context, req ChatRequest, onDelta func(Delta)) (*LLMResponse, error)
}

// Error is a failed provider call, classified for the retry policy and for
// explaining it to the user.
type Error struct {
	Provider   string
	StatusCode int    // 0 when no HTTP response was received
	Message    string // vendor's message, never containing credentials
	Transient  bool
	// RetryAfter is the vendor's Retry-After hint, 0 if none.
	RetryAfter int64 // milliseconds
	Err        error
}

func (e *Error) Error() string {
	s := e.Provider + ": "
	if e.StatusCode != 0 {
		s += fmt.Sprintf("status %d: ", e.StatusCode)
	}
	s += e.Message
	if e.Err != nil && e.Message == "" {
		s += e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// IsTransient reports whether err is a provider error worth retrying.
func IsTransient(err error) bool {
	var pe *Error
	return errors.As(err, &pe) && pe.Transient
}
