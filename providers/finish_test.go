package providers

import "testing"

func TestFinishReasonsOf(t *testing.T) {
	m := FinishReasons{"max_tokens": FinishLength, "tool_use": FinishToolCalls}
	tests := []struct {
		reason    string
		toolCalls bool
		want      string
	}{
		{"max_tokens", false, FinishLength},
		{"max_tokens", true, FinishLength}, // the table wins over the calls
		{"tool_use", false, FinishToolCalls},
		{"stop", true, FinishToolCalls}, // "stop" with calls: the calls win
		{"stop", false, FinishStop},
		{"", false, FinishStop},
	}
	for _, tt := range tests {
		if got := m.Of(tt.reason, tt.toolCalls); got != tt.want {
			t.Errorf("Of(%q, %v) = %q, want %q", tt.reason, tt.toolCalls, got, tt.want)
		}
	}
}
