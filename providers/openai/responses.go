package openai

import (
	"context"
	"fmt"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/internal/calltimer"
)

// Responses is the OpenAI Responses API backend (POST {apiBase}/responses).
// It runs stateless: every call sends store:false and the whole
// conversation, asks for reasoning.encrypted_content, and replays the
// reasoning items the model produced (kept on the assistant message,
// providers.Message.ReasoningItems) so a reasoning model keeps its chain of
// thought across tool calls without the server storing anything.
// ChatRequest.CacheKey is sent as prompt_cache_key.
//
// It shares Options, error classification and tool-argument repair with
// the chat-completions Provider. A Responses is safe for concurrent use.
type Responses struct {
	base *Provider
	svc  responses.ResponseService
}

var _ providers.Provider = (*Responses)(nil)

// NewResponses builds a Responses backend. It does no IO. Options.APIBase
// is the endpoint up to /v1 (requests go to {APIBase}/responses);
// Options.RequestOptions and HTTPClient let a sign-in provider add its auth.
// Azure is not supported here.
func NewResponses(opts Options) (*Responses, error) {
	if opts.AzureAPIVersion != "" {
		return nil, fmt.Errorf("openai: %s: the responses api is not wired for azure; use the chat completions api", opts.Name)
	}
	p, err := New(opts)
	if err != nil {
		return nil, err
	}
	return &Responses{base: p, svc: responses.NewResponseService(p.reqOpts...)}, nil
}

// Chat sends one request and waits for the whole response (through a
// stream when Options.AlwaysStream is set).
func (r *Responses) Chat(ctx context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
	if r.base.opts.AlwaysStream {
		return r.Stream(ctx, req, nil)
	}
	params, err := r.params(req)
	if err != nil {
		return nil, err
	}
	t := calltimer.Start(ctx, r.base.opts.RequestTimeout, 0)
	defer t.Stop()
	res, err := r.svc.New(t.Context(), params)
	if err != nil {
		return nil, r.base.classify(t, err)
	}
	return r.parse(res.Output, res, req.Model)
}

// Stream sends a streaming request, calling onDelta (on this goroutine)
// for output text and reasoning-summary text as they arrive.
func (r *Responses) Stream(ctx context.Context, req providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	params, err := r.params(req)
	if err != nil {
		return nil, err
	}
	t := calltimer.Start(ctx, r.base.opts.RequestTimeout, r.base.opts.StreamIdleTimeout)
	defer t.Stop()
	stream := r.svc.NewStreaming(t.Context(), params)
	defer stream.Close()

	var (
		items []responses.ResponseOutputItemUnion
		final *responses.Response
	)
	for stream.Next() {
		t.Kick()
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta", "response.refusal.delta":
			if onDelta != nil && ev.Delta != "" {
				onDelta(providers.Delta{Content: ev.Delta})
			}
		case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
			if onDelta != nil && ev.Delta != "" {
				onDelta(providers.Delta{Reasoning: ev.Delta})
			}
		case "response.output_item.done":
			// The done item is complete: its encrypted_content and
			// arguments are final, unlike the added one.
			items = append(items, ev.Item)
		case "response.completed", "response.incomplete":
			res := ev.Response
			final = &res
		case "response.failed":
			return nil, r.failed(string(ev.Response.Error.Code), ev.Response.Error.Message)
		case "error":
			return nil, r.failed(ev.Code, ev.Message)
		}
		if final != nil {
			break
		}
	}
	if final == nil {
		if err := stream.Err(); err != nil {
			return nil, r.base.classify(t, err)
		}
		return nil, &providers.Error{
			Provider: r.base.name, Transient: true, Err: providers.ErrStreamTruncated,
			Message: "stream ended before response.completed",
		}
	}
	if len(final.Output) > 0 {
		// The completed response repeats every item; it is the authority.
		items = final.Output
	}
	return r.parse(items, final, req.Model)
}

// failed reports a response.failed or error event: the vendor's code and
// message, transient unless the code names a client mistake.
func (r *Responses) failed(code, msg string) error {
	if msg == "" {
		msg = "response failed"
	}
	if code != "" {
		msg = code + ": " + msg
	}
	transient := !strings.Contains(code, "invalid") && code != "context_length_exceeded"
	return &providers.Error{Provider: r.base.name, Message: providers.Redact(msg, r.base.opts.APIKey), Transient: transient}
}

// parse converts the output items and the response's status and usage.
func (r *Responses) parse(items []responses.ResponseOutputItemUnion, res *responses.Response, model string) (*providers.LLMResponse, error) {
	out := &providers.LLMResponse{Model: firstNonEmpty(res.Model, model), Usage: responsesUsage(res.Usage)}
	var text, refusal, reasoning strings.Builder
	for _, it := range items {
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				switch c.Type {
				case "output_text":
					text.WriteString(c.Text)
				case "refusal":
					refusal.WriteString(c.Refusal)
				}
			}
		case "function_call":
			out.ToolCalls = append(out.ToolCalls, providers.NewToolCallRequest(it.CallID, it.Name, it.Arguments.OfString))
		case "reasoning":
			ri := providers.ReasoningItem{ID: it.ID, EncryptedContent: it.EncryptedContent}
			for _, s := range it.Summary {
				ri.Summary = append(ri.Summary, s.Text)
				if reasoning.Len() > 0 {
					reasoning.WriteString("\n\n")
				}
				reasoning.WriteString(s.Text)
			}
			out.ReasoningItems = append(out.ReasoningItems, ri)
		}
	}
	out.Content = text.String()
	if out.Content == "" {
		out.Content = refusal.String()
	}
	out.ReasoningContent = reasoning.String()
	switch {
	case res.Status == responses.ResponseStatusIncomplete && res.IncompleteDetails.Reason == "content_filter":
		out.FinishReason = providers.FinishContentFilter
	case res.Status == responses.ResponseStatusIncomplete:
		out.FinishReason = providers.FinishLength
	case len(out.ToolCalls) > 0:
		out.FinishReason = providers.FinishToolCalls
	case refusal.Len() > 0 && text.Len() == 0:
		out.FinishReason = providers.FinishContentFilter
	default:
		out.FinishReason = providers.FinishStop
	}
	return out, nil
}

func responsesUsage(u responses.ResponseUsage) providers.Usage {
	out := providers.Usage{
		PromptTokens:     int(u.InputTokens),
		CompletionTokens: int(u.OutputTokens),
		TotalTokens:      int(u.TotalTokens),
		CacheReadTokens:  int(u.InputTokensDetails.CachedTokens),
		ReasoningTokens:  int(u.OutputTokensDetails.ReasoningTokens),
	}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.PromptTokens + out.CompletionTokens
	}
	return out
}

// params converts a ChatRequest. System messages become instructions;
// everything else becomes input items in order, an assistant message
// expanding to its reasoning items, its text and its function calls.
func (r *Responses) params(req providers.ChatRequest) (responses.ResponseNewParams, error) {
	if req.Model == "" {
		return responses.ResponseNewParams{}, r.base.requestError(fmt.Errorf("request has no model"))
	}
	if len(req.Messages) == 0 {
		return responses.ResponseNewParams{}, r.base.requestError(errNoMessages)
	}
	var (
		instructions []string
		input        responses.ResponseInputParam
	)
	for i, m := range req.Messages {
		switch m.Role {
		case providers.RoleSystem:
			instructions = append(instructions, m.Text())
		case providers.RoleUser:
			input = append(input, responsesUserItem(m))
		case providers.RoleAssistant:
			input = append(input, responsesAssistantItems(m)...)
		case providers.RoleTool:
			if m.ToolCallID == "" {
				return responses.ResponseNewParams{}, r.base.requestError(fmt.Errorf("message %d: tool result without tool_call_id", i))
			}
			out := responses.ResponseInputItemParamOfFunctionCallOutput(m.Text())
			out.OfFunctionCallOutput.CallID = oai.String(m.ToolCallID)
			input = append(input, out)
		default:
			return responses.ResponseNewParams{}, r.base.requestError(fmt.Errorf("message %d: unknown role %q", i, m.Role))
		}
	}
	params := responses.ResponseNewParams{
		Model:   shared.ResponsesModel(req.Model),
		Input:   responses.ResponseNewParamsInputUnion{OfInputItemList: input},
		Store:   oai.Bool(false),
		Include: []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
	}
	if len(instructions) > 0 {
		params.Instructions = oai.String(strings.Join(instructions, "\n\n"))
	}
	if req.CacheKey != "" {
		params.PromptCacheKey = oai.String(req.CacheKey)
	}
	if req.MaxTokens > 0 {
		params.MaxOutputTokens = oai.Int(int64(req.MaxTokens))
	}
	if req.Temperature != nil {
		params.Temperature = oai.Float(*req.Temperature)
	}
	if effort := strings.ToLower(strings.TrimSpace(req.ReasoningEffort)); effort != "" {
		params.Reasoning = shared.ReasoningParam{Effort: shared.ReasoningEffort(effort), Summary: shared.ReasoningSummaryAuto}
	}
	if len(req.Tools) > 0 {
		for _, t := range req.Tools {
			ft := responses.FunctionToolParam{
				Name:       t.Name,
				Parameters: providers.NormalizeSchema(t.Parameters, r.base.dialect),
				// Strict mode would demand every property be required.
				Strict: oai.Bool(false),
			}
			if t.Description != "" {
				ft.Description = oai.String(t.Description)
			}
			params.Tools = append(params.Tools, responses.ToolUnionParam{OfFunction: &ft})
		}
		params.ToolChoice = responsesToolChoice(req.ToolChoice)
	}
	return params, nil
}

func responsesToolChoice(choice string) responses.ResponseNewParamsToolChoiceUnion {
	switch c := strings.TrimSpace(choice); c {
	case "":
		return responses.ResponseNewParamsToolChoiceUnion{}
	case "auto", "none", "required":
		return responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: oai.Opt(responses.ToolChoiceOptions(c))}
	default:
		return responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: c}}
	}
}

func responsesUserItem(m providers.Message) responses.ResponseInputItemUnionParam {
	if len(m.Parts) == 0 {
		return responses.ResponseInputItemParamOfMessage(m.Content, responses.EasyInputMessageRoleUser)
	}
	var content responses.ResponseInputMessageContentListParam
	for _, part := range m.Parts {
		switch part.Type {
		case "image_url":
			if part.ImageURL == nil || part.ImageURL.URL == "" {
				continue
			}
			detail := responses.ResponseInputImageDetail(part.ImageURL.Detail)
			if detail == "" {
				detail = responses.ResponseInputImageDetailAuto
			}
			content = append(content, responses.ResponseInputContentUnionParam{
				OfInputImage: &responses.ResponseInputImageParam{Detail: detail, ImageURL: oai.String(part.ImageURL.URL)},
			})
		default:
			content = append(content, responses.ResponseInputContentParamOfInputText(part.Text))
		}
	}
	return responses.ResponseInputItemParamOfMessage(content, responses.EasyInputMessageRoleUser)
}

func responsesAssistantItems(m providers.Message) []responses.ResponseInputItemUnionParam {
	var items []responses.ResponseInputItemUnionParam
	for _, ri := range m.ReasoningItems {
		summary := make([]responses.ResponseReasoningItemSummaryParam, len(ri.Summary))
		for i, s := range ri.Summary {
			summary[i] = responses.ResponseReasoningItemSummaryParam{Text: s}
		}
		item := responses.ResponseInputItemParamOfReasoning(ri.ID, summary)
		if ri.EncryptedContent != "" {
			item.OfReasoning.EncryptedContent = oai.String(ri.EncryptedContent)
		}
		items = append(items, item)
	}
	if text := m.Text(); text != "" {
		items = append(items, responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleAssistant))
	}
	for _, tc := range m.ToolCalls {
		args := tc.Function.Arguments
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		items = append(items, responses.ResponseInputItemParamOfFunctionCall(args, tc.ID, tc.Function.Name))
	}
	return items
}
