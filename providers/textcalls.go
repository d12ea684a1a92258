package providers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Local model servers (Ollama, llama.cpp, vLLM, LM Studio) pass a model's
// tool calls through as text when their chat template does not parse
// them: Hermes and Qwen write <tool_call>{...}</tool_call>, Llama writes
// <|python_tag|>{...} or a bare {"name": ..., "parameters": ...}, Mistral
// writes [TOOL_CALLS][...] or [TOOL_CALLS]name[ARGS]{...}. TextToolCalls
// turns such an answer into real tool calls, and the streaming filter
// keeps the markup from reaching the user. A call counts only when it
// names a tool the request offered and its arguments are a JSON object;
// anything else, including prose that mentions the markers, stays text.

// Markers that open a tool call written as text.
const (
	markHermes     = "<tool_call>"
	markHermesEnd  = "</tool_call>"
	markPythonTag  = "<|python_tag|>"
	markMistral    = "[TOOL_CALLS]"
	markMistralArg = "[ARGS]"
)

var textCallMarkers = []string{markHermes, markPythonTag, markMistral}

// TextToolCalls finds the tool calls written as text in content, for the
// offered tools. It returns the text left once they are taken out and the
// calls; with no call found it returns content unchanged and nil.
func TextToolCalls(content string, offered []ToolDefinition) (string, []ToolCallRequest) {
	if len(offered) == 0 || strings.TrimSpace(content) == "" {
		return content, nil
	}
	names := make(map[string]bool, len(offered))
	for _, t := range offered {
		names[t.Name] = true
	}
	var calls []ToolCallRequest
	var ok bool
	text := content
	switch {
	case strings.Contains(content, markHermes):
		text, calls, ok = hermesCalls(content, names)
	case strings.Contains(content, markMistral):
		text, calls, ok = mistralCalls(content, names)
	case strings.Contains(content, markPythonTag):
		before, after, _ := strings.Cut(content, markPythonTag)
		calls, ok = jsonCalls(after, names)
		text = before
	default:
		// A bare JSON call must be the whole answer.
		calls, ok = jsonCalls(content, names)
		text = ""
	}
	if !ok || len(calls) == 0 {
		return content, nil
	}
	for i := range calls {
		calls[i].ID = fmt.Sprintf("call_text_%d", i+1)
	}
	return strings.TrimSpace(text), calls
}

// hermesCalls reads <tool_call>{...}</tool_call> blocks (the last one may
// lack its closing tag: generation stopped there). Every block must be a
// call; the text around them is kept.
func hermesCalls(content string, names map[string]bool) (string, []ToolCallRequest, bool) {
	var text strings.Builder
	var calls []ToolCallRequest
	rest := content
	for {
		before, after, found := strings.Cut(rest, markHermes)
		text.WriteString(before)
		if !found {
			break
		}
		body, tail, closed := strings.Cut(after, markHermesEnd)
		if !closed && strings.TrimSpace(tail) != "" {
			return "", nil, false
		}
		c, ok := oneCall(body, names)
		if !ok {
			return "", nil, false
		}
		calls = append(calls, c)
		rest = tail
	}
	return text.String(), calls, true
}

// mistralCalls reads [TOOL_CALLS] followed by a JSON array of calls, or by
// name[ARGS]{...} (one or more, each after its own [TOOL_CALLS]).
func mistralCalls(content string, names map[string]bool) (string, []ToolCallRequest, bool) {
	before, after, _ := strings.Cut(content, markMistral)
	after = strings.TrimSpace(after)
	if strings.HasPrefix(after, "[") || strings.HasPrefix(after, "{") {
		calls, ok := jsonCalls(after, names)
		return before, calls, ok
	}
	var calls []ToolCallRequest
	for _, part := range strings.Split(after, markMistral) {
		name, args, found := strings.Cut(strings.TrimSpace(part), markMistralArg)
		name = strings.TrimSpace(name)
		if !found || !names[name] {
			return "", nil, false
		}
		c := NewToolCallRequest("", name, args)
		if c.ArgumentsError != "" {
			return "", nil, false
		}
		calls = append(calls, c)
	}
	return before, calls, true
}

// jsonCalls reads text that is a JSON call object, an array of them, or
// several objects separated by semicolons or newlines (Llama).
func jsonCalls(text string, names map[string]bool) ([]ToolCallRequest, bool) {
	text = strings.TrimSpace(text)
	if strings.HasPrefix(text, "[") {
		var items []json.RawMessage
		if json.Unmarshal([]byte(text), &items) != nil || len(items) == 0 {
			return nil, false
		}
		var calls []ToolCallRequest
		for _, it := range items {
			c, ok := oneCall(string(it), names)
			if !ok {
				return nil, false
			}
			calls = append(calls, c)
		}
		return calls, true
	}
	if !strings.HasPrefix(text, "{") {
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(text))
	var calls []ToolCallRequest
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			break
		}
		c, ok := oneCall(string(raw), names)
		if !ok {
			return nil, false
		}
		calls = append(calls, c)
		// Skip a separator between objects.
		rest := strings.TrimLeft(text[dec.InputOffset():], " \t\r\n;")
		if rest == "" {
			return calls, true
		}
		dec = json.NewDecoder(strings.NewReader(rest))
		text = rest
	}
	return nil, false
}

// oneCall reads {"name": ..., "arguments" or "parameters": {...} or a JSON
// string of one}.
func oneCall(body string, names map[string]bool) (ToolCallRequest, bool) {
	var v struct {
		Name       string          `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if json.Unmarshal([]byte(strings.TrimSpace(body)), &v) != nil || !names[v.Name] {
		return ToolCallRequest{}, false
	}
	args := v.Arguments
	if len(args) == 0 {
		args = v.Parameters
	}
	c := NewToolCallRequest("", v.Name, string(args))
	if c.ArgumentsError != "" {
		return ToolCallRequest{}, false
	}
	return c, true
}

// textCallFilter passes streamed text on, holding back from the first
// place a tool call written as text may begin: a marker, the beginning of
// one at the end of what has come so far, or an answer that opens with
// "{" (a bare JSON call). What it held is released by flush when the
// answer turns out not to be a call.
type textCallFilter struct {
	out     func(Delta)
	full    strings.Builder
	emitted int
	holding bool // a marker (or an opening "{") was seen: hold the rest
}

func (f *textCallFilter) write(d Delta) {
	if d.Reasoning != "" {
		f.out(Delta{Reasoning: d.Reasoning})
	}
	if d.Content == "" {
		return
	}
	f.full.WriteString(d.Content)
	if f.holding {
		return
	}
	s := f.full.String()
	if strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "{") {
		f.holding = true
		return
	}
	safe := len(s)
	for _, m := range textCallMarkers {
		if i := strings.Index(s[f.emitted:], m); i >= 0 && f.emitted+i < safe {
			safe = f.emitted + i
			f.holding = true
		}
	}
	if !f.holding {
		// A marker may be cut between two deltas: keep back a tail
		// that begins one.
		for _, m := range textCallMarkers {
			for n := min(len(m)-1, len(s)-f.emitted); n > 0; n-- {
				if strings.HasSuffix(s, m[:n]) {
					safe = min(safe, len(s)-n)
					break
				}
			}
		}
	}
	if safe > f.emitted {
		f.out(Delta{Content: s[f.emitted:safe]})
		f.emitted = safe
	}
}

// flush sends what was held back (the answer was not a call).
func (f *textCallFilter) flush() {
	if s := f.full.String(); len(s) > f.emitted {
		f.out(Delta{Content: s[f.emitted:]})
		f.emitted = len(s)
	}
}

// textCalls is a Provider that turns tool calls written as text into
// tool calls (see TextToolCalls).
type textCalls struct{ next Provider }

func (t *textCalls) Chat(ctx context.Context, req ChatRequest) (*LLMResponse, error) {
	resp, err := t.next.Chat(ctx, req)
	if err == nil {
		convertTextCalls(resp, req.Tools)
	}
	return resp, err
}

func (t *textCalls) Stream(ctx context.Context, req ChatRequest, onDelta func(Delta)) (*LLMResponse, error) {
	if len(req.Tools) == 0 || onDelta == nil {
		resp, err := t.next.Stream(ctx, req, onDelta)
		if err == nil {
			convertTextCalls(resp, req.Tools)
		}
		return resp, err
	}
	f := &textCallFilter{out: onDelta}
	resp, err := t.next.Stream(ctx, req, f.write)
	if err != nil {
		return resp, err
	}
	if !convertTextCalls(resp, req.Tools) {
		f.flush()
	}
	return resp, nil
}

// convertTextCalls replaces resp's text tool calls with real ones; it
// reports whether it did.
func convertTextCalls(resp *LLMResponse, offered []ToolDefinition) bool {
	if resp == nil || len(resp.ToolCalls) > 0 {
		return false
	}
	text, calls := TextToolCalls(resp.Content, offered)
	if len(calls) == 0 {
		return false
	}
	resp.Content, resp.ToolCalls, resp.FinishReason = text, calls, "tool_calls"
	return true
}
