package anthropic

import (
	"fmt"
	"strings"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/internal/history"
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
		params.Messages[i] = wireMessage{Role: t.Role, Content: t.Blocks}
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

// messageBlocks spells the history's content in Messages API blocks.
var messageBlocks = history.Blocks[block]{
	Text:      func(s string) block { return newText(s) },
	Image:     imageContent,
	Assistant: assistantBlocks,
	ToolResult: func(id string, content []block) block {
		return &toolResultBlock{Type: "tool_result", ToolUseID: id, Content: content}
	},
}

// convert splits the OpenAI-shaped history into system blocks and
// alternating turns, merging consecutive messages of one role.
func convert(msgs []providers.Message) ([]*textBlock, []history.Turn[block], error) {
	texts, turns, err := messageBlocks.Convert(msgs)
	if err != nil {
		return nil, nil, err
	}
	system := make([]*textBlock, len(texts))
	for i, text := range texts {
		system[i] = newText(text)
	}
	return system, turns, nil
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
		blocks = append(blocks, &toolUseBlock{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: history.ToolInput(tc)})
	}
	return blocks
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
func markCacheBreakpoints(system []*textBlock, turns []history.Turn[block]) {
	if n := len(system); n > 0 {
		system[n-1].markCache()
	}
	last := -1
	for i := len(turns) - 1; i >= 0; i-- {
		if turns[i].Role == providers.RoleUser {
			last = i
			break
		}
	}
	if last <= 0 {
		return
	}
	blocks := turns[last-1].Blocks
	for i := len(blocks) - 1; i >= 0; i-- {
		if blocks[i].markCache() {
			return
		}
	}
}
