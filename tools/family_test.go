package tools

import (
	"slices"
	"testing"
)

func TestFamilies(t *testing.T) {
	got := WithFamily([]string{"exec", "edit_file", "web_fetch"})
	for _, want := range []string{"exec", "write_stdin", "list_exec_sessions", "edit_file", "apply_patch", "web_fetch"} {
		if !slices.Contains(got, want) {
			t.Errorf("WithFamily lacks %s: %v", want, got)
		}
	}
	if got := WithSessions([]string{"exec", "write_file"}); !slices.Contains(got, "write_stdin") || slices.Contains(got, "apply_patch") {
		t.Errorf("WithSessions: %v", got)
	}
}
