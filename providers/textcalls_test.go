package providers

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

var weatherTools = []ToolDefinition{{Name: "get_weather"}, {Name: "read_file"}}

// The samples are written the way each family's models answer when the
// server's chat template leaves their tool calls in the content.
func TestTextToolCallsFormats(t *testing.T) {
	tests := []struct {
		name, content, wantText string
		want                    []string // name:arguments JSON of each call
	}{
		{"hermes", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", "",
			[]string{`get_weather:{"city":"Paris"}`}},
		{"hermes with text and two calls", "I'll look both up.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.md\"}}\n</tool_call>",
			"I'll look both up.", []string{`get_weather:{"city":"Paris"}`, `read_file:{"path":"notes.md"}`}},
		{"qwen, arguments as a string, no closing tag", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Oslo\\\"}\"}", "",
			[]string{`get_weather:{"city":"Oslo"}`}},
		{"llama python tag", "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Rome\"}}", "",
			[]string{`get_weather:{"city":"Rome"}`}},
		{"llama bare JSON", "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Rome\"}}", "",
			[]string{`get_weather:{"city":"Rome"}`}},
		{"llama two calls", "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Rome\"}}; {\"name\": \"get_weather\", \"parameters\": {\"city\": \"Bern\"}}", "",
			[]string{`get_weather:{"city":"Rome"}`, `get_weather:{"city":"Bern"}`}},
		{"mistral array", "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lyon\"}}]", "",
			[]string{`get_weather:{"city":"Lyon"}`}},
		{"mistral name and args", "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Lyon\"}[TOOL_CALLS]read_file[ARGS]{\"path\": \"a\"}", "",
			[]string{`get_weather:{"city":"Lyon"}`, `read_file:{"path":"a"}`}},
		// Text stays text.
		{"prose about the tag", "Models mark calls with <tool_call> and </tool_call> tags.", "", nil},
		{"a tool not offered", "<tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call>", "", nil},
		{"broken JSON", "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": </tool_call>", "", nil},
		{"a JSON answer", "{\"answer\": 42}", "", nil},
		{"arguments not an object", "{\"name\": \"get_weather\", \"parameters\": [1, 2]}", "", nil},
		{"text after a bare call", "{\"name\": \"get_weather\", \"parameters\": {}} and that is how", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, calls := TextToolCalls(tt.content, weatherTools)
			var got []string
			for _, c := range calls {
				args, _ := json.Marshal(c.Arguments)
				got = append(got, c.Name+":"+string(args))
				if c.ID == "" {
					t.Error("a call without an ID")
				}
			}
			if !sameCalls(got, tt.want) {
				t.Errorf("calls %q, want %q", got, tt.want)
			}
			switch {
			case tt.want == nil && text != tt.content:
				t.Errorf("text changed to %q though no call was found", text)
			case tt.want != nil && text != tt.wantText:
				t.Errorf("text %q, want %q", text, tt.wantText)
			}
		})
	}
	if _, calls := TextToolCalls("<tool_call>{\"name\": \"get_weather\", \"arguments\": {}}</tool_call>", nil); calls != nil {
		t.Error("calls found although the request offered no tools")
	}
}

// sameCalls compares name:arguments with the arguments' spacing ignored.
func sameCalls(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if strings.ReplaceAll(got[i], " ", "") != strings.ReplaceAll(want[i], " ", "") {
			return false
		}
	}
	return true
}

// scripted streams its deltas and answers content.
type scripted struct {
	deltas []string
}

func (s *scripted) Chat(ctx context.Context, req ChatRequest) (*LLMResponse, error) {
	return &LLMResponse{Content: strings.Join(s.deltas, ""), FinishReason: "stop"}, nil
}

func (s *scripted) Stream(ctx context.Context, req ChatRequest, onDelta func(Delta)) (*LLMResponse, error) {
	for _, d := range s.deltas {
		onDelta(Delta{Content: d})
	}
	return s.Chat(ctx, req)
}

// TestTextToolCallsStreamed: the user sees the text before a call and
// never the call's markup, even with a marker cut between deltas; an
// answer that only mentions a marker arrives whole and in order.
func TestTextToolCallsStreamed(t *testing.T) {
	tests := []struct {
		name     string
		deltas   []string
		shown    string
		wantCall bool
	}{
		{"marker cut in two", []string{"Let me check. <to", "ol_call>\n{\"name\": \"get_", "weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"}, "Let me check. ", true},
		{"bare JSON", []string{"{\"name\": ", "\"get_weather\", \"parameters\": {}}"}, "", true},
		{"mistral", []string{"[TOOL", "_CALLS]get_weather[ARGS]{}"}, "", true},
		{"prose", []string{"Wrap calls in <tool", "_call> tags, like <tool_call>this</tool_call>. Done."}, "Wrap calls in <tool_call> tags, like <tool_call>this</tool_call>. Done.", false},
		{"a lone <", []string{"a < b", " and c"}, "a < b and c", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &textCalls{next: &scripted{deltas: tt.deltas}}
			var shown strings.Builder
			resp, err := p.Stream(t.Context(), ChatRequest{Tools: weatherTools}, func(d Delta) { shown.WriteString(d.Content) })
			if err != nil {
				t.Fatal(err)
			}
			if shown.String() != tt.shown {
				t.Errorf("shown %q, want %q", shown.String(), tt.shown)
			}
			if got := len(resp.ToolCalls) > 0; got != tt.wantCall {
				t.Errorf("tool calls %v, want some: %v (content %q)", resp.ToolCalls, tt.wantCall, resp.Content)
			}
			if tt.wantCall && resp.FinishReason != "tool_calls" {
				t.Errorf("finish reason %q", resp.FinishReason)
			}
		})
	}
}
