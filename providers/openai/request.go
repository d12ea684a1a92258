package openai

import (
	"fmt"
	"strings"

	"github.com/nanobot-go/nanobot/providers"
)

// params converts a ChatRequest into the request body.
func (p *Provider) params(req providers.ChatRequest) (chatRequest, error) {
	if req.Model == "" {
		return chatRequest{}, p.requestError(fmt.Errorf("request has no model"))
	}
	if len(req.Messages) == 0 {
		return chatRequest{}, p.requestError(errNoMessages)
	}
	msgs := make([]chatMessage, 0, len(req.Messages))
	for i, m := range req.Messages {
		mp, err := p.message(m)
		if err != nil {
			return chatRequest{}, p.requestError(fmt.Errorf("message %d: %w", i, err))
		}
		msgs = append(msgs, mp)
	}
	params := chatRequest{Model: req.Model, Messages: msgs}
	if req.MaxTokens > 0 {
		if p.opts.MaxCompletionTokens {
			params.MaxCompletionTokens = req.MaxTokens
		} else {
			params.MaxTokens = req.MaxTokens
		}
	}
	if !fixedTemperature(req.Model) {
		params.Temperature = req.Temperature
	}
	params.ReasoningEffort = strings.ToLower(strings.TrimSpace(req.ReasoningEffort))
	if len(req.Tools) > 0 {
		params.Tools = make([]chatTool, len(req.Tools))
		for i, t := range req.Tools {
			params.Tools[i] = chatTool{Type: "function", Function: functionDecl{
				Name:        t.Name,
				Description: t.Description,
				Parameters:  providers.NormalizeSchema(t.Parameters, p.dialect),
			}}
		}
		params.ToolChoice = toolChoice(req.ToolChoice, func(name string) any {
			tc := namedToolChoice{Type: "function"}
			tc.Function.Name = name
			return tc
		})
	}
	return params, nil
}

// toolChoice maps "", auto, none, required or a tool name; nil leaves the
// field out (the server's default, auto). named builds the wire form of a
// tool name, which differs between the two APIs.
func toolChoice(choice string, named func(name string) any) any {
	switch c := strings.TrimSpace(choice); c {
	case "":
		return nil
	case "auto", "none", "required":
		return c
	default:
		return named(c)
	}
}

func (p *Provider) message(m providers.Message) (chatMessage, error) {
	switch m.Role {
	case providers.RoleSystem:
		return chatMessage{Role: "system", Content: m.Text()}, nil
	case providers.RoleUser:
		return userMessage(m), nil
	case providers.RoleAssistant:
		return p.assistantMessage(m), nil
	case providers.RoleTool:
		if m.ToolCallID == "" {
			return chatMessage{}, fmt.Errorf("tool result without tool_call_id")
		}
		// Tool messages carry text only in this API; images a tool returned
		// are described by their text parts.
		return chatMessage{Role: "tool", Content: m.Text(), ToolCallID: m.ToolCallID}, nil
	default:
		return chatMessage{}, fmt.Errorf("unknown role %q", m.Role)
	}
}

func userMessage(m providers.Message) chatMessage {
	if len(m.Parts) == 0 {
		return chatMessage{Role: "user", Content: m.Content}
	}
	parts := userParts(m.Parts, "text", func(img providers.ImageURL) any {
		return imagePart{Type: "image_url", ImageURL: imageURL{URL: img.URL, Detail: img.Detail}}
	})
	return chatMessage{Role: "user", Content: parts}
}

// userParts converts a user message's parts to the wire parts of either
// API: text as a textPart of textType, images through image; an image
// without a URL is dropped.
func userParts(parts []providers.ContentPart, textType string, image func(providers.ImageURL) any) []any {
	out := make([]any, 0, len(parts))
	for _, part := range parts {
		switch part.Type {
		case "image_url":
			if part.ImageURL == nil || part.ImageURL.URL == "" {
				continue
			}
			out = append(out, image(*part.ImageURL))
		default:
			out = append(out, textPart{Type: textType, Text: part.Text})
		}
	}
	return out
}

func (p *Provider) assistantMessage(m providers.Message) chatMessage {
	am := chatMessage{Role: "assistant"}
	if text := m.Text(); text != "" || len(m.ToolCalls) == 0 {
		am.Content = text
	}
	for _, tc := range m.ToolCalls {
		args := tc.Function.Arguments
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		am.ToolCalls = append(am.ToolCalls, chatToolCall{ID: tc.ID, Type: "function", Function: functionCall{Name: tc.Function.Name, Arguments: args}})
	}
	if !p.opts.NoReasoningReplay {
		// DeepSeek's thinking mode wants its reasoning back on the turn that
		// produced tool calls.
		am.ReasoningContent = m.ReasoningContent
	}
	return am
}

// fixedTemperature reports an OpenAI reasoning model (o1, o3, o4-mini,
// gpt-5 and its minis; not gpt-5-chat), which refuses any temperature but
// its default: the request leaves the field out for them. The name may
// carry a gateway's vendor prefix ("openai/gpt-5").
func fixedTemperature(model string) bool {
	name := strings.ToLower(model[strings.LastIndex(model, "/")+1:])
	for _, family := range []string{"o1", "o3", "o4"} {
		if rest, ok := strings.CutPrefix(name, family); ok && (rest == "" || rest[0] == '-') {
			return true
		}
	}
	return strings.HasPrefix(name, "gpt-5") && !strings.Contains(name, "-chat")
}
