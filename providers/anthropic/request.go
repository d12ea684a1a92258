package anthropic

import (
	"fmt"
	"strings"

	ant "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/nanobot-go/nanobot/providers"
)

// Thinking budgets per reasoning effort, in tokens.
var thinkingBudgets = map[string]int{
	"minimal": 1024,
	"low":     1024,
	"medium":  4096,
	"high":    16384,
	"xhigh":   32768,
	"max":     32768,
}

// emptyText stands in for empty content: the API rejects empty text blocks.
const emptyText = "(empty)"

// turn is one Messages API message under construction.
type turn struct {
	role   string // "user" or "assistant"
	blocks []ant.ContentBlockParamUnion
}

func (p *Provider) params(req providers.ChatRequest) (ant.MessageNewParams, error) {
	if req.Model == "" {
		return ant.MessageNewParams{}, p.requestError(fmt.Errorf("request has no model"))
	}
	system, turns, err := convert(req.Messages)
	if err != nil {
		return ant.MessageNewParams{}, p.requestError(err)
	}
	if len(turns) == 0 {
		return ant.MessageNewParams{}, p.requestError(fmt.Errorf("no user or assistant messages"))
	}
	markCacheBreakpoints(system, turns)

	params := ant.MessageNewParams{
		Model:    ant.Model(req.Model),
		System:   system,
		Messages: make([]ant.MessageParam, len(turns)),
	}
	for i, t := range turns {
		if t.role == providers.RoleAssistant {
			params.Messages[i] = ant.MessageParam{OfAssistant: &ant.AssistantMessageParam{Content: t.blocks}}
		} else {
			params.Messages[i] = ant.MessageParam{OfUser: &ant.UserMessageParam{Content: t.blocks}}
		}
	}

	forced := false
	if len(req.Tools) > 0 {
		params.Tools = make([]ant.ToolUnionParam, len(req.Tools))
		for i, td := range req.Tools {
			params.Tools[i] = ant.ToolUnionParam{OfTool: toolParam(td)}
		}
		params.ToolChoice, forced = toolChoice(req.ToolChoice)
	}

	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = p.opts.DefaultMaxTokens
	}
	if budget, ok := thinkingBudgets[strings.ToLower(strings.TrimSpace(req.ReasoningEffort))]; ok {
		if forced {
			// The API refuses thinking with a forced tool choice; the
			// explicit choice wins.
			p.log.Debug("thinking disabled: tool choice is forced", "tool_choice", req.ToolChoice)
		} else {
			params.Thinking = ant.ThinkingConfigParamOfEnabled(int64(budget))
			if maxTokens <= budget {
				maxTokens += budget
			}
		}
	}
	params.MaxTokens = int64(maxTokens)
	return params, nil
}

func (p *Provider) requestError(err error) error {
	return &providers.Error{Provider: p.name, Message: err.Error(), Err: err}
}

// convert splits the OpenAI-shaped history into system blocks and
// alternating turns, merging consecutive messages of one role.
func convert(msgs []providers.Message) ([]ant.TextBlockParam, []turn, error) {
	var (
		system []ant.TextBlockParam
		turns  []turn
	)
	add := func(role string, blocks ...ant.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(turns); n > 0 && turns[n-1].role == role {
			turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
			return
		}
		turns = append(turns, turn{role: role, blocks: blocks})
	}
	for i, m := range msgs {
		switch m.Role {
		case providers.RoleSystem:
			if text := m.Text(); strings.TrimSpace(text) != "" {
				system = append(system, ant.TextBlockParam{Text: text})
			}
		case providers.RoleUser:
			blocks := contentBlocks(m)
			if len(blocks) == 0 {
				blocks = append(blocks, ant.NewTextBlock(emptyText))
			}
			add(providers.RoleUser, blocks...)
		case providers.RoleAssistant:
			add(providers.RoleAssistant, assistantBlocks(m)...)
		case providers.RoleTool:
			if m.ToolCallID == "" {
				return nil, nil, fmt.Errorf("message %d: tool result without tool_call_id", i)
			}
			add(providers.RoleUser, toolResult(m))
		default:
			return nil, nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	return system, turns, nil
}

// contentBlocks converts text and image content.
func contentBlocks(m providers.Message) []ant.ContentBlockParamUnion {
	if len(m.Parts) == 0 {
		if m.Content == "" {
			return nil
		}
		return []ant.ContentBlockParamUnion{ant.NewTextBlock(m.Content)}
	}
	var blocks []ant.ContentBlockParamUnion
	for _, part := range m.Parts {
		switch part.Type {
		case "image_url":
			if part.ImageURL == nil {
				continue
			}
			blocks = append(blocks, imageBlock(part.ImageURL.URL))
		default:
			if part.Text != "" {
				blocks = append(blocks, ant.NewTextBlock(part.Text))
			}
		}
	}
	return blocks
}

// imageBlock turns a data: URL into a base64 source and an http(s) URL into
// a URL source; anything else becomes a text note so the turn still makes sense.
func imageBlock(u string) ant.ContentBlockParamUnion {
	if mediaType, data, ok := parseDataURL(u); ok {
		return ant.NewImageBlockBase64(mediaType, data)
	}
	if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		return ant.NewImageBlock(ant.URLImageSourceParam{URL: u})
	}
	return ant.NewTextBlock("[image omitted: unsupported image reference]")
}

// parseDataURL splits "data:image/png;base64,AAAA".
func parseDataURL(u string) (mediaType, data string, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", "", false
	}
	meta, payload, found := strings.Cut(rest, ",")
	if !found || !strings.HasSuffix(meta, ";base64") {
		return "", "", false
	}
	mediaType = strings.ToLower(strings.TrimSuffix(meta, ";base64"))
	if mediaType == "image/jpg" {
		mediaType = "image/jpeg"
	}
	switch mediaType {
	case "image/jpeg", "image/png", "image/gif", "image/webp":
		return mediaType, payload, true
	}
	return "", "", false
}

// assistantBlocks: signed thinking first (the API checks signatures and
// rejects unsigned thinking), then text, then tool_use.
func assistantBlocks(m providers.Message) []ant.ContentBlockParamUnion {
	var blocks []ant.ContentBlockParamUnion
	for _, tb := range m.ThinkingBlocks {
		switch {
		case tb.Type == "redacted_thinking" && tb.Data != "":
			blocks = append(blocks, ant.NewRedactedThinkingBlock(tb.Data))
		case tb.Type != "redacted_thinking" && tb.Signature != "":
			blocks = append(blocks, ant.NewThinkingBlock(tb.Signature, tb.Thinking))
		}
	}
	if text := m.Text(); strings.TrimSpace(text) != "" {
		blocks = append(blocks, ant.NewTextBlock(text))
	}
	for _, tc := range m.ToolCalls {
		args, _, err := providers.ParseToolArguments(tc.Function.Arguments)
		if err != nil {
			// The call ran (or failed) with these arguments already; the
			// replay only needs a valid object.
			args = map[string]any{}
		}
		blocks = append(blocks, ant.NewToolUseBlock(tc.ID, args, tc.Function.Name))
	}
	return blocks
}

func toolResult(m providers.Message) ant.ContentBlockParamUnion {
	res := ant.ToolResultBlockParam{ToolUseID: m.ToolCallID}
	for _, b := range contentBlocks(m) {
		switch {
		case b.OfText != nil:
			res.Content = append(res.Content, ant.ToolResultBlockParamContentUnion{OfText: b.OfText})
		case b.OfImage != nil:
			res.Content = append(res.Content, ant.ToolResultBlockParamContentUnion{OfImage: b.OfImage})
		}
	}
	if len(res.Content) == 0 {
		res.Content = []ant.ToolResultBlockParamContentUnion{{OfText: &ant.TextBlockParam{Text: emptyText}}}
	}
	return ant.ContentBlockParamUnion{OfToolResult: &res}
}

func toolParam(td providers.ToolDefinition) *ant.ToolParam {
	schema := providers.NormalizeSchema(td.Parameters, providers.DialectAnthropic)
	in := ant.ToolInputSchemaParam{Properties: schema["properties"]}
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				in.Required = append(in.Required, s)
			}
		}
	}
	for k, v := range schema {
		switch k {
		case "type", "properties", "required":
		default:
			if in.ExtraFields == nil {
				in.ExtraFields = map[string]any{}
			}
			in.ExtraFields[k] = v
		}
	}
	tp := &ant.ToolParam{Name: td.Name, InputSchema: in}
	if td.Description != "" {
		tp.Description = ant.String(td.Description)
	}
	return tp
}

// toolChoice maps ours; forced reports a choice that excludes thinking.
func toolChoice(choice string) (ant.ToolChoiceUnionParam, bool) {
	switch c := strings.TrimSpace(choice); c {
	case "":
		return ant.ToolChoiceUnionParam{}, false
	case "auto":
		return ant.ToolChoiceUnionParam{OfAuto: &ant.ToolChoiceAutoParam{Type: "auto"}}, false
	case "none":
		none := ant.NewToolChoiceNoneParam()
		return ant.ToolChoiceUnionParam{OfNone: &none}, false
	case "required":
		return ant.ToolChoiceUnionParam{OfAny: &ant.ToolChoiceAnyParam{Type: "any"}}, true
	default:
		return ant.ToolChoiceUnionParam{OfTool: &ant.ToolChoiceToolParam{Type: "tool", Name: c}}, true
	}
}

// markCacheBreakpoints puts cache_control on the last system block and on
// the last message before the newest user message: everything up to there
// is the same in the next call (history is append-only), so it is read from
// the cache instead of being processed again.
func markCacheBreakpoints(system []ant.TextBlockParam, turns []turn) {
	if n := len(system); n > 0 {
		system[n-1].CacheControl = ant.NewCacheControlEphemeralParam()
	}
	last := -1
	for i := len(turns) - 1; i >= 0; i-- {
		if turns[i].role == providers.RoleUser {
			last = i
			break
		}
	}
	if last <= 0 {
		return
	}
	blocks := turns[last-1].blocks
	for i := len(blocks) - 1; i >= 0; i-- {
		if setCacheControl(&blocks[i]) {
			return
		}
	}
}

// setCacheControl marks one block; thinking blocks cannot carry a marker.
func setCacheControl(b *ant.ContentBlockParamUnion) bool {
	cc := ant.NewCacheControlEphemeralParam()
	switch {
	case b.OfText != nil:
		b.OfText.CacheControl = cc
	case b.OfImage != nil:
		b.OfImage.CacheControl = cc
	case b.OfToolUse != nil:
		b.OfToolUse.CacheControl = cc
	case b.OfToolResult != nil:
		b.OfToolResult.CacheControl = cc
	default:
		return false
	}
	return true
}
