package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSystemPromptMemo: the system prompt is reused while its files are
// unchanged, rebuilt when one changes (same size, other time), and never
// reused while a file is fresh from a write.
func TestSystemPromptMemo(t *testing.T) {
	ws := t.TempDir()
	soul := filepath.Join(ws, "SOUL.md")
	old := time.Now().Add(-time.Hour)
	write := func(text string, at time.Time) {
		t.Helper()
		if err := os.WriteFile(soul, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if !at.IsZero() {
			if err := os.Chtimes(soul, at, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	b := &ContextBuilder{Workspace: ws}
	write("be brief", old)
	if p := b.SystemPrompt(); !strings.Contains(p, "be brief") {
		t.Fatalf("prompt without SOUL.md:\n%s", p)
	}
	if b.memo.key == "" {
		t.Fatal("a prompt of files unchanged for an hour was not kept")
	}
	// Same size, another time: rebuilt.
	write("be witty", old.Add(time.Minute))
	if p := b.SystemPrompt(); !strings.Contains(p, "be witty") {
		t.Errorf("SOUL.md changed, prompt did not:\n%s", p)
	}
	// Rewritten just now: read again each time, not reused.
	write("be vague", time.Time{})
	if p := b.SystemPrompt(); !strings.Contains(p, "be vague") {
		t.Errorf("fresh SOUL.md not in the prompt:\n%s", p)
	}
	if err := os.WriteFile(soul, []byte("be exact"), 0o600); err != nil {
		t.Fatal(err)
	}
	if p := b.SystemPrompt(); !strings.Contains(p, "be exact") {
		t.Errorf("SOUL.md rewritten within the same moment, same size: prompt kept the old text:\n%s", p)
	}
	// A new memory file is seen too.
	mem := filepath.Join(ws, "memory", "MEMORY.md")
	if err := os.MkdirAll(filepath.Dir(mem), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mem, []byte("the user's cat is Tom"), 0o600); err != nil {
		t.Fatal(err)
	}
	if p := b.SystemPrompt(); !strings.Contains(p, "cat is Tom") {
		t.Errorf("MEMORY.md not in the prompt:\n%s", p)
	}
}
