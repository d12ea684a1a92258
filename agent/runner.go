package agent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/internal/redact"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

// ToolSet is what the runner needs of the tool registry.
type ToolSet interface {
	Definitions() []tools.Definition
	Execute(ctx context.Context, name string, args map[string]any) (tools.Result, error)
}

// EventKind says what a runner Event reports.
type EventKind int

const (
	// EventDelta is streamed reply text.
	EventDelta EventKind = iota
	// EventStreamEnd ends one LLM call's streamed text; Text is all of it.
	EventStreamEnd
	// EventToolHint announces a tool call (Text is a one-line summary).
	EventToolHint
	// EventReasoning is streamed reasoning text (not shown by default).
	EventReasoning
	// EventWaiting says the provider's rate limiter holds the next call
	// back for a moment (the chat shows typing, not an error).
	EventWaiting
)

// Event is progress of a run, delivered in order from the run's goroutine.
type Event struct {
	Kind EventKind
	Text string
	// Final is set on the EventStreamEnd of a call without tool calls: its
	// text is the reply.
	Final bool
	// Usage is the tokens of the call an EventStreamEnd ends.
	Usage providers.Usage
}

// Stop reasons of a run that did not end by itself.
const (
	StopMaxIterations  = "max_iterations"
	StopCircuitBreaker = "circuit_breaker"
)

// circuitBreakerLimit is how often the same failing call may repeat.
const circuitBreakerLimit = 3

// RetryHint follows every failed tool result.
const RetryHint = tools.RetryHint

// Runner alternates LLM calls and tool executions for one turn.
type Runner struct {
	Provider        providers.Provider
	Tools           ToolSet // nil: no tools
	Model           string
	MaxTokens       int
	Temperature     *float64
	ReasoningEffort string
	// MaxIterations caps LLM calls that may request tools (default 40).
	MaxIterations int
	// Stream uses the provider's streaming call and emits deltas.
	Stream bool
	// Observer is told about each provider call and tool execution
	// (optional).
	Observer RunObserver
	// Ledger records every provider call (optional); Agent and
	// ProviderName label the records (Agent "" is DefaultAgentName).
	Ledger       *usage.Ledger
	Agent        string
	ProviderName string
	Log          *slog.Logger
	// Redact, when set, removes its secrets from the model's text before
	// anyone sees it: streamed deltas (holding back a tail that could be
	// the start of a secret split across deltas), the final content,
	// reasoning and the saved messages. Tool results are redacted by the
	// tool registry (tools.WithRedactor).
	Redact *redact.Redactor
	// Budgets, when set, is asked before each provider call and refuses
	// it with a *usage.BudgetError when a budget is used up; it must
	// enforce over Ledger (the calls' records settle its reservations).
	Budgets *usage.Budgets
	// Hooks are asked before and after each model and tool call
	// (optional; see hooks.go).
	Hooks Hooks
}

// RunResult is what a run produced.
type RunResult struct {
	// Messages are the new assistant and tool messages, in order.
	Messages []providers.Message
	// Content is the final reply text.
	Content string
	Usage   providers.Usage
	// Calls counts LLM calls.
	Calls int
	// Stopped is "", StopMaxIterations or StopCircuitBreaker.
	Stopped string
	// Injected are the indices in Messages of the user messages a steer
	// function added during the run, in order.
	Injected []int
}

// Run sends msgs (system, history, user) to the model and executes the tool
// calls it asks for until a reply without tool calls, the iteration cap or
// the circuit breaker. At the cap or breaker one more call is made with tools
// disabled, so the user always gets an answer. emit may be nil.
func (r *Runner) Run(ctx context.Context, msgs []providers.Message, emit func(Event)) (*RunResult, error) {
	return r.RunSteered(ctx, msgs, emit, nil)
}

// RunSteered is Run with steering: after each round of tool results, before
// the next model call, steer is asked for user messages written meanwhile;
// they join the conversation there (after the tool results) and are listed
// in RunResult.Injected. Messages written while the final answer is being
// produced are not asked for: the caller keeps them for the next turn. steer
// is called from the run's goroutine and may be nil.
func (r *Runner) RunSteered(ctx context.Context, msgs []providers.Message, emit func(Event), steer func() []providers.Message) (*RunResult, error) {
	if emit == nil {
		emit = func(Event) {}
	}
	maxIter := r.MaxIterations
	if maxIter <= 0 {
		maxIter = 40
	}
	var defs []providers.ToolDefinition
	if r.Tools != nil {
		for _, d := range r.Tools.Definitions() {
			defs = append(defs, providers.ToolDefinition{Name: d.Name, Description: d.Description, Parameters: d.Parameters})
		}
	}
	conv := append([]providers.Message(nil), msgs...)
	res := &RunResult{}
	failures := map[string]int{}

	for {
		if res.Calls >= maxIter {
			res.Stopped = StopMaxIterations
			break
		}
		resp, err := r.call(ctx, conv, defs, "", emit)
		res.Calls++
		if err != nil {
			return res, err
		}
		addUsage(&res.Usage, resp.Usage)
		am := assistantMessage(resp)
		if len(resp.ToolCalls) == 0 {
			res.Content = resp.Content
			res.Messages = append(res.Messages, am)
			return res, nil
		}
		conv = append(conv, am)
		res.Messages = append(res.Messages, am)

		for _, tc := range resp.ToolCalls {
			emit(Event{Kind: EventToolHint, Text: toolHint(tc, r.Redact)})
		}
		outcomes := r.execute(ctx, resp.ToolCalls)
		if err := ctx.Err(); err != nil {
			return res, err
		}
		var images []providers.ContentPart
		tripped := false
		for i, tc := range resp.ToolCalls {
			o := outcomes[i]
			tm := providers.Message{Role: providers.RoleTool, ToolCallID: tc.ID, Name: tc.Name, Content: o.text}
			conv = append(conv, tm)
			res.Messages = append(res.Messages, tm)
			images = append(images, o.images...)
			if o.failed {
				key := callKey(tc)
				failures[key]++
				if failures[key] >= circuitBreakerLimit {
					tripped = true
				}
			}
		}
		if len(images) > 0 {
			im := providers.Message{Role: providers.RoleUser, Parts: append([]providers.ContentPart{providers.TextPart("[Images returned by the tool calls above]")}, images...)}
			conv = append(conv, im)
			res.Messages = append(res.Messages, im)
		}
		if steer != nil {
			for _, um := range steer() {
				conv = append(conv, um)
				res.Injected = append(res.Injected, len(res.Messages))
				res.Messages = append(res.Messages, um)
			}
		}
		if tripped {
			res.Stopped = StopCircuitBreaker
			break
		}
	}

	// Wrap up: one call without tools, so the user is never left without a
	// reply. The instruction is sent but not stored.
	note := "[System: you have reached the limit of tool calls for this turn. Do not call tools. Reply to the user now: summarise what you did, what you found and what is left.]"
	if res.Stopped == StopCircuitBreaker {
		note = "[System: the same tool call failed " + fmt.Sprint(circuitBreakerLimit) + " times with the same arguments. Do not call tools again. Tell the user what you tried, the error, and what they could do.]"
	}
	conv = append(conv, providers.Message{Role: providers.RoleUser, Content: note})
	resp, err := r.call(ctx, conv, defs, "none", emit)
	res.Calls++
	if err != nil {
		return res, err
	}
	addUsage(&res.Usage, resp.Usage)
	resp.ToolCalls = nil
	res.Content = resp.Content
	res.Messages = append(res.Messages, assistantMessage(resp))
	return res, nil
}

func (r *Runner) call(ctx context.Context, conv []providers.Message, defs []providers.ToolDefinition, toolChoice string, emit func(Event)) (*providers.LLMResponse, error) {
	if !hooking(r.Hooks, HookBeforeModel) && !hooking(r.Hooks, HookAfterModel) {
		return r.callModel(ctx, conv, defs, toolChoice, emit)
	}
	return r.callHooked(ctx, conv, defs, toolChoice, emit)
}

// callModel is one model call, without hooks.
func (r *Runner) callModel(ctx context.Context, conv []providers.Message, defs []providers.ToolDefinition, toolChoice string, emit func(Event)) (*providers.LLMResponse, error) {
	req := providers.ChatRequest{
		Model: r.Model, Messages: conv, Tools: defs, ToolChoice: toolChoice,
		MaxTokens: r.MaxTokens, Temperature: r.Temperature, ReasoningEffort: r.ReasoningEffort,
	}
	if cc, ok := tools.CallContextFrom(ctx); ok {
		req.CacheKey = cc.SessionKey
	}
	if len(defs) == 0 {
		req.ToolChoice = ""
	}
	rsv, err := r.reserveBudget(ctx, conv, defs)
	if err != nil {
		return nil, err
	}
	defer rsv.Release() // after observeLLM put the real usage in the ledger
	// A rate limiter holding the call back is told to the chat (typing).
	req.OnWait = func(time.Duration) { emit(Event{Kind: EventWaiting}) }
	ctx = r.withAttempts(ctx)
	start := time.Now()
	if !r.Stream {
		resp, err := r.Provider.Chat(ctx, req)
		r.observeLLM(ctx, start, conv, defs, resp, err)
		if err != nil {
			return nil, err
		}
		r.redactResponse(resp)
		emit(Event{Kind: EventStreamEnd, Text: resp.Content, Final: len(resp.ToolCalls) == 0, Usage: resp.Usage})
		return resp, nil
	}
	text, reasoning := r.Redact.Stream(), r.Redact.Stream()
	resp, err := r.Provider.Stream(ctx, req, func(d providers.Delta) {
		if t := text.Next(d.Content); t != "" {
			emit(Event{Kind: EventDelta, Text: t})
		}
		if t := reasoning.Next(d.Reasoning); t != "" {
			emit(Event{Kind: EventReasoning, Text: t})
		}
	})
	r.observeLLM(ctx, start, conv, defs, resp, err)
	if t := text.Flush(); t != "" && err == nil {
		emit(Event{Kind: EventDelta, Text: t})
	}
	if t := reasoning.Flush(); t != "" && err == nil {
		emit(Event{Kind: EventReasoning, Text: t})
	}
	if err != nil {
		return nil, err
	}
	r.redactResponse(resp)
	emit(Event{Kind: EventStreamEnd, Text: resp.Content, Final: len(resp.ToolCalls) == 0 || toolChoice == "none", Usage: resp.Usage})
	return resp, nil
}

// redactResponse removes Redact's secrets from what the model said, before
// it is emitted or saved. Tool call arguments are redacted in the saved
// message only: the call itself runs with what the model sent.
func (r *Runner) redactResponse(resp *providers.LLMResponse) {
	if r.Redact == nil {
		return
	}
	resp.Content = r.Redact.Secrets(resp.Content)
	resp.ReasoningContent = r.Redact.Secrets(resp.ReasoningContent)
	for i := range resp.ToolCalls {
		resp.ToolCalls[i].RawArguments = r.Redact.Secrets(resp.ToolCalls[i].RawArguments)
	}
}

type outcome struct {
	text   string
	images []providers.ContentPart
	failed bool
}

// execute runs the calls concurrently and returns their outcomes in order.
func (r *Runner) execute(ctx context.Context, calls []providers.ToolCallRequest) []outcome {
	out := make([]outcome, len(calls))
	var wg sync.WaitGroup
	for i, tc := range calls {
		wg.Go(func() {
			start := time.Now()
			out[i] = r.executeOne(ctx, tc)
			if r.Observer != nil {
				r.Observer.ObserveTool(ctx, ToolCall{Name: tc.Name, Duration: time.Since(start), Failed: out[i].failed})
			}
		})
	}
	wg.Wait()
	return out
}

func (r *Runner) executeOne(ctx context.Context, tc providers.ToolCallRequest) outcome {
	if !hooking(r.Hooks, HookBeforeTool) && !hooking(r.Hooks, HookAfterTool) {
		return r.runTool(ctx, tc)
	}
	return r.runToolHooked(ctx, tc)
}

// runTool executes one tool call, without hooks.
func (r *Runner) runTool(ctx context.Context, tc providers.ToolCallRequest) (o outcome) {
	defer func() {
		if p := recover(); p != nil {
			o = failed(fmt.Errorf("tool %s crashed: %v", tc.Name, p))
		}
	}()
	if tc.ArgumentsError != "" {
		return failed(fmt.Errorf("the arguments of %s are not valid JSON: %s", tc.Name, tc.ArgumentsError))
	}
	if r.Tools == nil {
		return failed(fmt.Errorf("tool %s is not available", tc.Name))
	}
	args := tc.Arguments
	if args == nil {
		args = map[string]any{}
	}
	result, err := r.Tools.Execute(ctx, tc.Name, args)
	if err != nil {
		if r.Log != nil {
			r.Log.Debug("tool failed", "tool", tc.Name, "err", err)
		}
		return failed(err)
	}
	o.text = result.Content
	if o.text == "" && len(result.Images) == 0 {
		o.text = "(no output)"
	}
	for _, img := range result.Images {
		o.images = append(o.images, providers.ImagePart("data:"+img.MIMEType+";base64,"+base64.StdEncoding.EncodeToString(img.Data)))
	}
	if len(o.images) > 0 {
		o.text += fmt.Sprintf("\n[%d image(s) attached below]", len(o.images))
	}
	return o
}

func failed(err error) outcome {
	msg := err.Error()
	if errors.Is(err, context.DeadlineExceeded) {
		msg = "timed out: " + msg
	}
	if refused := (*tools.RefusedError)(nil); errors.As(err, &refused) {
		return outcome{text: "Error: " + msg, failed: true} // told not to try another way
	}
	return outcome{text: "Error: " + msg + "\n\n" + RetryHint, failed: true}
}

// callKey identifies a call by tool and arguments (JSON with sorted keys).
func callKey(tc providers.ToolCallRequest) string {
	b, _ := json.Marshal(tc.Arguments)
	return tc.Name + "\x00" + string(b)
}

func assistantMessage(resp *providers.LLMResponse) providers.Message {
	m := providers.Message{
		Role: providers.RoleAssistant, Content: resp.Content,
		ReasoningContent: resp.ReasoningContent, ThinkingBlocks: resp.ThinkingBlocks,
		ReasoningItems: resp.ReasoningItems,
	}
	for _, tc := range resp.ToolCalls {
		raw := tc.RawArguments
		if raw == "" || tc.ArgumentsError != "" {
			b, _ := json.Marshal(tc.Arguments)
			if tc.Arguments == nil {
				b = []byte("{}")
			}
			raw = string(b)
		}
		m.ToolCalls = append(m.ToolCalls, providers.ToolCall{ID: tc.ID, Type: "function", Function: providers.FunctionCall{Name: tc.Name, Arguments: raw}})
	}
	return m
}

func addUsage(dst *providers.Usage, u providers.Usage) {
	dst.PromptTokens += u.PromptTokens
	dst.CompletionTokens += u.CompletionTokens
	dst.TotalTokens += u.TotalTokens
	dst.CacheReadTokens += u.CacheReadTokens
	dst.CacheWriteTokens += u.CacheWriteTokens
}

// toolHint summarises a call in one line: the tool and its main argument,
// its secrets masked before it is cut short (a cut secret would no longer
// match).
func toolHint(tc providers.ToolCallRequest, red *redact.Redactor) string {
	for _, k := range []string{"command", "path", "url", "query", "task", "message", "content"} {
		if s, ok := tc.Arguments[k].(string); ok && s != "" {
			return tc.Name + ": " + truncateRunes(oneLine(red.Secrets(s)), 60)
		}
	}
	return tc.Name
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
