package openai

import "testing"

func TestOllamaEchoed(t *testing.T) {
	for _, c := range []struct {
		in, want string
		echoed   bool
	}{
		{`<tool_call>{"a":1}</tool_call>{"a":1}</tool_call>`, `<tool_call>{"a":1}</tool_call>`, true},
		{`see {x}{x}`, `see {x}`, true}, // the answer "see {x}" doubled from its "{"
		{`see {x}`, `see {x}`, false},
		{`{"a":1}{"a":1}`, `{"a":1}{"a":1}`, false}, // nothing before "{": Ollama parsed or passed it whole
		{" \n{x}{x}", " \n{x}{x}", false},
		{`see {x}{y}`, `see {x}{y}`, false},
		{`no braces at all`, `no braces at all`, false},
		{``, ``, false},
	} {
		got, echoed := ollamaEchoed(c.in)
		if got != c.want || echoed != c.echoed {
			t.Errorf("ollamaEchoed(%q) = %q, %v; want %q, %v", c.in, got, echoed, c.want, c.echoed)
		}
	}
	for _, c := range []struct {
		sofar, piece string
		echo         bool
	}{
		{`<tool_call>{"a":1}</tool_call>`, `{"a":1}</tool_call>`, true},
		{`<tool_call>{"a":1}</tool_call>`, `</tool_call>`, false},
		{`{"a":1}`, `{"a":1}`, false},
		{`text {x}`, ``, false},
	} {
		if got := isOllamaEcho(c.sofar, c.piece); got != c.echo {
			t.Errorf("isOllamaEcho(%q, %q) = %v", c.sofar, c.piece, got)
		}
	}
}
