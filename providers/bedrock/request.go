package bedrock

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/internal/history"
)

// The Converse API's JSON shapes (the parts nanobot sends and reads). Blocks
// are unions: exactly one field is set.

type converseRequest struct {
	Messages        []message        `json:"messages"`
	System          []block          `json:"system,omitempty"`
	InferenceConfig *inferenceConfig `json:"inferenceConfig,omitempty"`
	ToolConfig      *toolConfig      `json:"toolConfig,omitempty"`
	// AdditionalModelRequestFields carries model-specific fields (thinking,
	// the config's extraBody).
	AdditionalModelRequestFields map[string]any `json:"additionalModelRequestFields,omitempty"`
}

type message struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

type block struct {
	Text             *string           `json:"text,omitempty"`
	Image            *imageBlock       `json:"image,omitempty"`
	ToolUse          *toolUse          `json:"toolUse,omitempty"`
	ToolResult       *toolResult       `json:"toolResult,omitempty"`
	ReasoningContent *reasoningContent `json:"reasoningContent,omitempty"`
}

type imageBlock struct {
	Format string      `json:"format"`
	Source imageSource `json:"source"`
}

type imageSource struct {
	Bytes []byte `json:"bytes"` // base64 in JSON, as the API wants
}

type toolUse struct {
	ToolUseID string `json:"toolUseId"`
	Name      string `json:"name"`
	Input     any    `json:"input"`
}

type toolResult struct {
	ToolUseID string  `json:"toolUseId"`
	Content   []block `json:"content"`
	Status    string  `json:"status,omitempty"`
}

type reasoningContent struct {
	ReasoningText   *reasoningText `json:"reasoningText,omitempty"`
	RedactedContent []byte         `json:"redactedContent,omitempty"`
}

type reasoningText struct {
	Text      string `json:"text"`
	Signature string `json:"signature,omitempty"`
}

type inferenceConfig struct {
	MaxTokens   int      `json:"maxTokens,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
}

type toolConfig struct {
	Tools      []toolSpecWrap `json:"tools"`
	ToolChoice map[string]any `json:"toolChoice,omitempty"`
}

type toolSpecWrap struct {
	ToolSpec toolSpec `json:"toolSpec"`
}

type toolSpec struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	InputSchema map[string]any `json:"inputSchema"`
}

// noopTool is declared when the history holds tool blocks but the request
// offers no tools: Bedrock refuses tool history without a toolConfig.
const noopTool = "nanobot_noop"

// Thinking budgets per reasoning effort for Claude models, in tokens.
var thinkingBudgets = map[string]int{
	"minimal": 1024, "low": 1024, "medium": 4096, "high": 16384, "xhigh": 32768, "max": 32768,
}

// text is a text block; "" becomes history.EmptyText, as Bedrock rejects
// empty text blocks.
func text(s string) block {
	if s == "" {
		s = history.EmptyText
	}
	return block{Text: &s}
}

// buildRequest converts a ChatRequest to a Converse body.
func (p *Provider) buildRequest(req providers.ChatRequest) (*converseRequest, error) {
	system, msgs, err := convert(req.Messages)
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("no user or assistant messages")
	}
	out := &converseRequest{System: system, Messages: msgs}

	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = p.opts.DefaultMaxTokens
	}
	additional := map[string]any{}
	thinking := false
	if effort := strings.ToLower(strings.TrimSpace(req.ReasoningEffort)); effort != "" && effort != "none" && isClaude(req.Model) {
		switch {
		case adaptiveOnly(req.Model):
			t := map[string]any{"type": "adaptive"}
			if effort != "adaptive" {
				t["effort"] = effort
			}
			additional["thinking"] = t
			thinking = true
		case thinkingBudgets[effort] > 0:
			budget := thinkingBudgets[effort]
			additional["thinking"] = map[string]any{"type": "enabled", "budget_tokens": budget}
			if maxTokens <= budget {
				maxTokens += budget
			}
			thinking = true
		}
	}
	out.InferenceConfig = &inferenceConfig{MaxTokens: maxTokens}
	// Claude refuses a temperature with thinking on, and the newest Opus
	// refuses one at all.
	if req.Temperature != nil && !thinking && !adaptiveOnly(req.Model) {
		out.InferenceConfig.Temperature = req.Temperature
	}
	for k, v := range p.opts.ExtraBody {
		additional[k] = mergeValue(additional[k], v)
	}
	if len(additional) > 0 {
		out.AdditionalModelRequestFields = additional
	}

	tools := req.Tools
	if req.ToolChoice == "none" {
		tools = nil
	}
	if len(tools) > 0 {
		tc := &toolConfig{}
		for _, td := range providers.NormalizeTools(tools, providers.DialectAnthropic) {
			schema := td.Parameters
			if schema == nil {
				schema = map[string]any{"type": "object", "properties": map[string]any{}}
			}
			tc.Tools = append(tc.Tools, toolSpecWrap{toolSpec{Name: td.Name, Description: td.Description,
				InputSchema: map[string]any{"json": schema}}})
		}
		switch req.ToolChoice {
		case "", "auto":
			tc.ToolChoice = map[string]any{"auto": map[string]any{}}
		case "required":
			tc.ToolChoice = map[string]any{"any": map[string]any{}}
		default:
			tc.ToolChoice = map[string]any{"tool": map[string]any{"name": req.ToolChoice}}
		}
		out.ToolConfig = tc
	} else if hasToolBlocks(msgs) {
		out.ToolConfig = &toolConfig{Tools: []toolSpecWrap{{toolSpec{Name: noopTool,
			Description: "Placeholder so earlier tool calls in the history are accepted; do not call it.",
			InputSchema: map[string]any{"json": map[string]any{"type": "object", "properties": map[string]any{}}}}}}}
	}
	return out, nil
}

// mergeValue deep-merges objects; anything else is replaced by v.
func mergeValue(base, v any) any {
	bm, ok1 := base.(map[string]any)
	vm, ok2 := v.(map[string]any)
	if !ok1 || !ok2 {
		return v
	}
	out := make(map[string]any, len(bm)+len(vm))
	for k, x := range bm {
		out[k] = x
	}
	for k, x := range vm {
		out[k] = mergeValue(out[k], x)
	}
	return out
}

func isClaude(model string) bool { return strings.Contains(strings.ToLower(model), "claude") }

// adaptiveOnly: models that accept only adaptive thinking and no temperature.
func adaptiveOnly(model string) bool {
	return strings.Contains(strings.ToLower(model), "claude-opus-4-7")
}

func hasToolBlocks(msgs []message) bool {
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.ToolUse != nil || b.ToolResult != nil {
				return true
			}
		}
	}
	return false
}

// converseBlocks spells the history's content in Converse blocks.
var converseBlocks = history.Blocks[block]{
	Text:      text,
	Image:     image,
	Assistant: assistantBlocks,
	ToolResult: func(id string, content []block) block {
		return block{ToolResult: &toolResult{ToolUseID: id, Content: content, Status: "success"}}
	},
}

// convert turns the OpenAI-shaped history into Converse messages: system
// text apart, tool results as user toolResult blocks, consecutive messages
// of one role merged (Bedrock wants the roles to alternate), and a leading
// assistant message preceded by a placeholder user turn.
func convert(msgs []providers.Message) ([]block, []message, error) {
	texts, turns, err := converseBlocks.Convert(msgs)
	if err != nil {
		return nil, nil, err
	}
	var system []block
	for _, t := range texts {
		system = append(system, text(t))
	}
	var out []message
	if len(turns) > 0 && turns[0].Role == providers.RoleAssistant {
		out = append(out, message{Role: providers.RoleUser, Content: []block{text("")}})
	}
	for _, t := range turns {
		out = append(out, message{Role: t.Role, Content: t.Blocks})
	}
	return system, out, nil
}

// image turns a data: URL into an image block; Converse takes no image
// URLs, so any other URL becomes a text note.
func image(u string) block {
	rest, ok := strings.CutPrefix(u, "data:image/")
	if ok {
		meta, data, ok := strings.Cut(rest, ",")
		format, isBase64 := strings.CutSuffix(meta, ";base64")
		if ok && isBase64 {
			if raw, err := base64.StdEncoding.DecodeString(data); err == nil {
				format = strings.ToLower(format)
				if format == "jpg" {
					format = "jpeg"
				}
				return block{Image: &imageBlock{Format: format, Source: imageSource{Bytes: raw}}}
			}
			return text("(invalid image data)")
		}
	}
	if len(u) > 200 {
		u = u[:200] + "…"
	}
	return text("(image URL: " + u + ")")
}

func assistantBlocks(m providers.Message) []block {
	var blocks []block
	for _, tb := range m.ThinkingBlocks {
		switch {
		case tb.Type == "redacted_thinking" && tb.Data != "":
			if raw, err := base64.StdEncoding.DecodeString(tb.Data); err == nil {
				blocks = append(blocks, block{ReasoningContent: &reasoningContent{RedactedContent: raw}})
			}
		case tb.Thinking != "" && tb.Signature != "":
			blocks = append(blocks, block{ReasoningContent: &reasoningContent{
				ReasoningText: &reasoningText{Text: tb.Thinking, Signature: tb.Signature}}})
		}
	}
	if t := m.Text(); t != "" {
		blocks = append(blocks, text(t))
	}
	for _, tc := range m.ToolCalls {
		blocks = append(blocks, block{ToolUse: &toolUse{ToolUseID: tc.ID, Name: tc.Function.Name, Input: history.ToolInput(tc)}})
	}
	if len(blocks) == 0 {
		blocks = []block{text("")}
	}
	return blocks
}

// marshal encodes the request body.
func (r *converseRequest) marshal() ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	return b, nil
}
