package openai

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/internal/calltimer"
	"github.com/nanobot-go/nanobot/providers/internal/wire"
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
}

var _ providers.Provider = (*Responses)(nil)

// NewResponses builds a Responses backend. It does no IO. Options.APIBase
// is the endpoint up to /v1 (requests go to {APIBase}/responses);
// Options.HTTPClient lets a sign-in provider add its auth (its transport).
// Azure is not supported here.
func NewResponses(opts Options) (*Responses, error) {
	if opts.AzureAPIVersion != "" {
		return nil, fmt.Errorf("openai: %s: the responses api is not wired for azure; use the chat completions api", opts.Name)
	}
	p, err := New(opts)
	if err != nil {
		return nil, err
	}
	return &Responses{base: p}, nil
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
	body, err := r.base.encode(params, false)
	if err != nil {
		return nil, r.base.requestError(err)
	}
	body, header, err := r.prepare(ctx, req.Model, body)
	if err != nil {
		return nil, err
	}
	t := calltimer.Start(ctx, r.base.opts.RequestTimeout, 0)
	defer t.Stop()
	var res responseObject
	if err := r.base.call(t.Context(), "responses", req.Model, body, &res, header); err != nil {
		return nil, r.base.classify(t, err)
	}
	return r.parse(res.Output, &res, req.Model)
}

// Stream sends a streaming request, calling onDelta (on this goroutine)
// for output text and reasoning-summary text as they arrive.
func (r *Responses) Stream(ctx context.Context, req providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	params, err := r.params(req)
	if err != nil {
		return nil, err
	}
	params.Stream = true
	body, err := r.base.encode(params, true)
	if err != nil {
		return nil, r.base.requestError(err)
	}
	body, header, err := r.prepare(ctx, req.Model, body)
	if err != nil {
		return nil, err
	}
	t := calltimer.Start(ctx, r.base.opts.RequestTimeout, r.base.opts.StreamIdleTimeout)
	defer t.Stop()
	items, final, err := r.readStream(t, req.Model, body, header, onDelta)
	if err != nil {
		return nil, err
	}
	if len(final.Output) > 0 {
		// The completed response repeats every item; it is the authority.
		items = final.Output
	}
	return r.parse(items, final, req.Model)
}

// readStream posts a streaming request and reads events until the
// response is complete, returning the done items and the final response.
// Its errors are classified.
func (r *Responses) readStream(t *calltimer.Timer, model string, body []byte, header http.Header, onDelta func(providers.Delta)) ([]outputItem, *responseObject, error) {
	res, err := r.base.post(t.Context(), "responses", model, body, true, header)
	if err != nil {
		return nil, nil, r.base.classify(t, err)
	}
	defer res.Body.Close()
	events := wire.NewSSEReader(res.Body)
	var items []outputItem
	for {
		data, err := events.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, r.base.classify(t, err)
		}
		t.Kick()
		if isDone(data) {
			break
		}
		var ev streamEvent
		if err := wire.DecodeLenient(data, &ev); err != nil {
			return nil, nil, r.base.classify(t, fmt.Errorf("decode stream event: %w", err))
		}
		if present(ev.Error) {
			return nil, nil, r.base.classify(t, &wire.EventError{Data: bytes.Clone(data)})
		}
		switch ev.Type {
		case "response.output_text.delta", "response.refusal.delta":
			if onDelta != nil && ev.Delta != "" {
				onDelta(providers.Delta{Content: string(ev.Delta)})
			}
		case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
			if onDelta != nil && ev.Delta != "" {
				onDelta(providers.Delta{Reasoning: string(ev.Delta)})
			}
		case "response.output_item.done":
			// The done item is complete: its encrypted_content and
			// arguments are final, unlike the added one.
			if ev.Item != nil {
				items = append(items, *ev.Item)
			}
		case "response.completed", "response.incomplete":
			if ev.Response == nil {
				ev.Response = &responseObject{}
			}
			return items, ev.Response, nil
		case "response.failed":
			if ev.Response == nil {
				ev.Response = &responseObject{}
			}
			return nil, nil, r.failed(string(ev.Response.Error.Code), ev.Response.Error.Message)
		case "error":
			return nil, nil, r.failed(string(ev.Code), ev.Message)
		}
	}
	return nil, nil, &providers.Error{
		Provider: r.base.name, Transient: true, Err: providers.ErrStreamTruncated,
		Message: "stream ended before response.completed",
	}
}

// prepare runs Options.Prepare on an encoded body, returning the body to
// send and the headers to add (nil without a hook).
func (r *Responses) prepare(ctx context.Context, model string, body []byte) ([]byte, http.Header, error) {
	if r.base.opts.Prepare == nil {
		return body, nil, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, nil, r.base.requestError(err)
	}
	header := http.Header{}
	if err := r.base.opts.Prepare(ctx, model, fields, header); err != nil {
		var pe *providers.Error
		if errors.As(err, &pe) {
			return nil, nil, err
		}
		return nil, nil, r.base.requestError(err)
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return nil, nil, r.base.requestError(err)
	}
	return b, header, nil
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
func (r *Responses) parse(items []outputItem, res *responseObject, model string) (*providers.LLMResponse, error) {
	out := &providers.LLMResponse{Model: firstNonEmpty(res.Model, model), Usage: responsesUsage(res)}
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
			out.ToolCalls = append(out.ToolCalls, providers.NewToolCallRequest(it.CallID, it.Name, string(it.Arguments)))
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
	case res.Status == "incomplete" && res.IncompleteDetails.Reason == "content_filter":
		out.FinishReason = providers.FinishContentFilter
	case res.Status == "incomplete":
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

func responsesUsage(res *responseObject) providers.Usage {
	u := &res.Usage
	out := providers.Usage{
		PromptTokens:     u.InputTokens,
		CompletionTokens: u.OutputTokens,
		TotalTokens:      u.TotalTokens,
		CacheReadTokens:  u.InputTokensDetails.CachedTokens,
		ReasoningTokens:  u.OutputTokensDetails.ReasoningTokens,
	}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.PromptTokens + out.CompletionTokens
	}
	return out
}

// params converts a ChatRequest. System messages become instructions;
// everything else becomes input items in order, an assistant message
// expanding to its reasoning items, its text and its function calls.
func (r *Responses) params(req providers.ChatRequest) (responsesRequest, error) {
	if req.Model == "" {
		return responsesRequest{}, r.base.requestError(fmt.Errorf("request has no model"))
	}
	if len(req.Messages) == 0 {
		return responsesRequest{}, r.base.requestError(errNoMessages)
	}
	var (
		instructions []string
		input        []any
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
				return responsesRequest{}, r.base.requestError(fmt.Errorf("message %d: tool result without tool_call_id", i))
			}
			input = append(input, inputFunctionCallOutput{Type: "function_call_output", CallID: m.ToolCallID, Output: m.Text()})
		default:
			return responsesRequest{}, r.base.requestError(fmt.Errorf("message %d: unknown role %q", i, m.Role))
		}
	}
	params := responsesRequest{
		Model:           req.Model,
		Input:           input,
		Instructions:    strings.Join(instructions, "\n\n"),
		Store:           false,
		Include:         []string{"reasoning.encrypted_content"},
		PromptCacheKey:  req.CacheKey,
		MaxOutputTokens: max(req.MaxTokens, 0),
	}
	if !fixedTemperature(req.Model) {
		params.Temperature = req.Temperature
	}
	if effort := strings.ToLower(strings.TrimSpace(req.ReasoningEffort)); effort != "" {
		params.Reasoning = &responsesReasoning{Effort: effort, Summary: "auto"}
	}
	if len(req.Tools) > 0 {
		for _, t := range req.Tools {
			params.Tools = append(params.Tools, responsesTool{
				Type:        "function",
				Name:        t.Name,
				Description: t.Description,
				Parameters:  providers.NormalizeSchema(t.Parameters, r.base.dialect),
				// Strict mode would demand every property be required.
				Strict: false,
			})
		}
		params.ToolChoice = toolChoice(req.ToolChoice, func(name string) any {
			return responsesNamedToolChoice{Type: "function", Name: name}
		})
	}
	return params, nil
}

func responsesUserItem(m providers.Message) inputMessage {
	if len(m.Parts) == 0 {
		return inputMessage{Role: "user", Content: m.Content}
	}
	content := userParts(m.Parts, "input_text", func(img providers.ImageURL) any {
		return inputImage{Type: "input_image", Detail: cmp.Or(img.Detail, "auto"), ImageURL: img.URL}
	})
	return inputMessage{Role: "user", Content: content}
}

func responsesAssistantItems(m providers.Message) []any {
	var items []any
	for _, ri := range m.ReasoningItems {
		summary := make([]textPart, len(ri.Summary))
		for i, s := range ri.Summary {
			summary[i] = textPart{Type: "summary_text", Text: s}
		}
		items = append(items, inputReasoning{Type: "reasoning", ID: ri.ID, EncryptedContent: ri.EncryptedContent, Summary: summary})
	}
	if text := m.Text(); text != "" {
		items = append(items, inputMessage{Role: "assistant", Content: text})
	}
	for _, tc := range m.ToolCalls {
		args := tc.Function.Arguments
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		items = append(items, inputFunctionCall{Type: "function_call", CallID: tc.ID, Name: tc.Function.Name, Arguments: args})
	}
	return items
}
