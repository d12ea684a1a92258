package openai

import (
	"fmt"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/nanobot-go/nanobot/providers"
)

// params converts a ChatRequest into SDK parameters.
func (p *Provider) params(req providers.ChatRequest) (oai.ChatCompletionNewParams, error) {
	if req.Model == "" {
		return oai.ChatCompletionNewParams{}, p.requestError(fmt.Errorf("request has no model"))
	}
	if len(req.Messages) == 0 {
		return oai.ChatCompletionNewParams{}, p.requestError(errNoMessages)
	}
	msgs := make([]oai.ChatCompletionMessageParamUnion, 0, len(req.Messages))
	for i, m := range req.Messages {
		mp, err := p.message(m)
		if err != nil {
			return oai.ChatCompletionNewParams{}, p.requestError(fmt.Errorf("message %d: %w", i, err))
		}
		msgs = append(msgs, mp)
	}
	params := oai.ChatCompletionNewParams{
		Model:    shared.ChatModel(req.Model),
		Messages: msgs,
	}
	if req.MaxTokens > 0 {
		if p.opts.MaxCompletionTokens {
			params.MaxCompletionTokens = oai.Int(int64(req.MaxTokens))
		} else {
			params.MaxTokens = oai.Int(int64(req.MaxTokens))
		}
	}
	if req.Temperature != nil {
		params.Temperature = oai.Float(*req.Temperature)
	}
	if effort := strings.ToLower(strings.TrimSpace(req.ReasoningEffort)); effort != "" {
		params.ReasoningEffort = shared.ReasoningEffort(effort)
	}
	if len(req.Tools) > 0 {
		params.Tools = make([]oai.ChatCompletionToolUnionParam, len(req.Tools))
		for i, t := range req.Tools {
			fd := shared.FunctionDefinitionParam{
				Name:       t.Name,
				Parameters: shared.FunctionParameters(providers.NormalizeSchema(t.Parameters, p.dialect)),
			}
			if t.Description != "" {
				fd.Description = oai.String(t.Description)
			}
			params.Tools[i] = oai.ChatCompletionToolUnionParam{OfFunction: &oai.ChatCompletionFunctionToolParam{Function: fd}}
		}
		params.ToolChoice = toolChoice(req.ToolChoice)
	}
	return params, nil
}

// toolChoice maps "", auto, none, required or a tool name.
func toolChoice(choice string) oai.ChatCompletionToolChoiceOptionUnionParam {
	switch c := strings.TrimSpace(choice); c {
	case "":
		return oai.ChatCompletionToolChoiceOptionUnionParam{}
	case "auto", "none", "required":
		return oai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: oai.String(c)}
	default:
		return oai.ChatCompletionToolChoiceOptionUnionParam{
			OfFunctionToolChoice: &oai.ChatCompletionNamedToolChoiceParam{
				Function: oai.ChatCompletionNamedToolChoiceFunctionParam{Name: c},
			},
		}
	}
}

func (p *Provider) message(m providers.Message) (oai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case providers.RoleSystem:
		return oai.SystemMessage(m.Text()), nil
	case providers.RoleUser:
		return userMessage(m), nil
	case providers.RoleAssistant:
		return p.assistantMessage(m), nil
	case providers.RoleTool:
		if m.ToolCallID == "" {
			return oai.ChatCompletionMessageParamUnion{}, fmt.Errorf("tool result without tool_call_id")
		}
		// Tool messages carry text only in this API; images a tool returned
		// are described by their text parts.
		return oai.ToolMessage(m.Text(), m.ToolCallID), nil
	default:
		return oai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", m.Role)
	}
}

func userMessage(m providers.Message) oai.ChatCompletionMessageParamUnion {
	if len(m.Parts) == 0 {
		return oai.UserMessage(m.Content)
	}
	parts := make([]oai.ChatCompletionContentPartUnionParam, 0, len(m.Parts))
	for _, part := range m.Parts {
		switch part.Type {
		case "image_url":
			if part.ImageURL == nil || part.ImageURL.URL == "" {
				continue
			}
			img := oai.ChatCompletionContentPartImageImageURLParam{URL: part.ImageURL.URL, Detail: part.ImageURL.Detail}
			parts = append(parts, oai.ChatCompletionContentPartUnionParam{
				OfImageURL: &oai.ChatCompletionContentPartImageParam{ImageURL: img},
			})
		default:
			parts = append(parts, oai.ChatCompletionContentPartUnionParam{
				OfText: &oai.ChatCompletionContentPartTextParam{Text: part.Text},
			})
		}
	}
	return oai.UserMessage(parts)
}

func (p *Provider) assistantMessage(m providers.Message) oai.ChatCompletionMessageParamUnion {
	var am oai.ChatCompletionAssistantMessageParam
	text := m.Text()
	if text != "" || len(m.ToolCalls) == 0 {
		am.Content.OfString = oai.String(text)
	}
	for _, tc := range m.ToolCalls {
		args := tc.Function.Arguments
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		am.ToolCalls = append(am.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
			OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
				ID:       tc.ID,
				Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Function.Name, Arguments: args},
			},
		})
	}
	if m.ReasoningContent != "" && !p.opts.NoReasoningReplay {
		// DeepSeek's thinking mode wants its reasoning back on the turn that
		// produced tool calls; the SDK has no field for it.
		am.SetExtraFields(map[string]any{"reasoning_content": m.ReasoningContent})
	}
	return oai.ChatCompletionMessageParamUnion{OfAssistant: &am}
}
