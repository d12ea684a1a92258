package anthropic

import (
	"fmt"
	"strings"

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
	blocks []block
}

func (p *Provider) params(req providers.ChatRequest) (*messageRequest, error) {
	if req.Model == "" {
		return nil, p.requestError(fmt.Errorf("request has no model"))
	}
	system, turns, err := convert(req.Messages)
	if err != nil {
		return nil, p.requestError(err)
	}
	if len(turns) == 0 {
		return nil, p.requestError(fmt.Errorf("no user or assistant messages"))
	}
	markCacheBreakpoints(system, turns)

	params := &messageRequest{
		Model:    req.Model,
		System:   system,
		Messages: make([]wireMessage, len(turns)),
	}
	for i, t := range turns {
		params.Messages[i] = wireMessage{Role: t.role, Content: t.blocks}
	}

	forced := false
	if len(req.Tools) > 0 {
		params.Tools = make([]wireTool, len(req.Tools))
		for i, td := range req.Tools {
			params.Tools[i] = toolParam(td)
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
			params.Thinking = &thinkingConfig{Type: "enabled", BudgetTokens: budget}
			if maxTokens <= budget {
				maxTokens += budget
			}
		}
	}
	params.MaxTokens = maxTokens
	return params, nil
}

func (p *Provider) requestError(err error) error {
	return &providers.Error{Provider: p.name, Message: err.Error(), Err: err}
}

// convert splits the OpenAI-shaped history into system blocks and
// alternating turns, merging consecutive messages of one role.
func convert(msgs []providers.Message) ([]*textBlock, []turn, error) {
	var (
		system []*textBlock
		turns  []turn
	)
	add := func(role string, blocks ...block) {
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
				system = append(system, newText(text))
			}
		case providers.RoleUser:
			blocks := contentBlocks(m)
			if len(blocks) == 0 {
				blocks = append(blocks, newText(emptyText))
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
func contentBlocks(m providers.Message) []block {
	if len(m.Parts) == 0 {
		if m.Content == "" {
			return nil
		}
		return []block{newText(m.Content)}
	}
	var blocks []block
	for _, part := range m.Parts {
		switch part.Type {
		case "image_url":
			if part.ImageURL == nil {
				continue
			}
			blocks = append(blocks, imageContent(part.ImageURL.URL))
		default:
			if part.Text != "" {
				blocks = append(blocks, newText(part.Text))
			}
		}
	}
	return blocks
}

// imageContent turns a data: URL into a base64 source and an http(s) URL into
// a URL source; anything else becomes a text note so the turn still makes sense.
func imageContent(u string) block {
	if mediaType, data, ok := parseDataURL(u); ok {
		return &imageBlock{Type: "image", Source: imageSource{Type: "base64", MediaType: mediaType, Data: data}}
	}
	if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		return &imageBlock{Type: "image", Source: imageSource{Type: "url", URL: u}}
	}
	return newText("[image omitted: unsupported image reference]")
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
func assistantBlocks(m providers.Message) []block {
	var blocks []block
	for _, tb := range m.ThinkingBlocks {
		switch {
		case tb.Type == "redacted_thinking" && tb.Data != "":
			blocks = append(blocks, &redactedThinkingBlock{Type: "redacted_thinking", Data: tb.Data})
		case tb.Type != "redacted_thinking" && tb.Signature != "":
			blocks = append(blocks, &thinkingBlock{Type: "thinking", Thinking: tb.Thinking, Signature: tb.Signature})
		}
	}
	if text := m.Text(); strings.TrimSpace(text) != "" {
		blocks = append(blocks, newText(text))
	}
	for _, tc := range m.ToolCalls {
		args, _, err := providers.ParseToolArguments(tc.Function.Arguments)
		if err != nil {
			// The call ran (or failed) with these arguments already; the
			// replay only needs a valid object.
			args = map[string]any{}
		}
		blocks = append(blocks, &toolUseBlock{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: args})
	}
	return blocks
}

// toolResult keeps the text and image content of a tool message.
func toolResult(m providers.Message) block {
	res := &toolResultBlock{Type: "tool_result", ToolUseID: m.ToolCallID}
	for _, b := range contentBlocks(m) {
		switch b.(type) {
		case *textBlock, *imageBlock:
			res.Content = append(res.Content, b)
		}
	}
	if len(res.Content) == 0 {
		res.Content = []block{newText(emptyText)}
	}
	return res
}

// toolParam sends the tool's schema as an object schema; "required" keeps
// only its string entries.
func toolParam(td providers.ToolDefinition) wireTool {
	schema := providers.NormalizeSchema(td.Parameters, providers.DialectAnthropic)
	in := map[string]any{"type": "object"}
	for k, v := range schema {
		switch k {
		case "type":
		case "properties":
			if v != nil {
				in[k] = v
			}
		case "required":
			var names []string
			if list, ok := v.([]any); ok {
				for _, r := range list {
					if s, ok := r.(string); ok {
						names = append(names, s)
					}
				}
			}
			if len(names) > 0 {
				in[k] = names
			}
		default:
			in[k] = v
		}
	}
	return wireTool{Name: td.Name, Description: td.Description, InputSchema: in}
}

// toolChoice maps ours; forced reports a choice that excludes thinking.
func toolChoice(choice string) (*wireToolChoice, bool) {
	switch c := strings.TrimSpace(choice); c {
	case "":
		return nil, false
	case "auto", "none":
		return &wireToolChoice{Type: c}, false
	case "required":
		return &wireToolChoice{Type: "any"}, true
	default:
		return &wireToolChoice{Type: "tool", Name: c}, true
	}
}

// markCacheBreakpoints puts cache_control on the last system block and on
// the last message before the newest user message: everything up to there
// is the same in the next call (history is append-only), so it is read from
// the cache instead of being processed again.
func markCacheBreakpoints(system []*textBlock, turns []turn) {
	if n := len(system); n > 0 {
		system[n-1].markCache()
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
		if blocks[i].markCache() {
			return
		}
	}
}
