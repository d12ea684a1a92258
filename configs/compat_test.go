package configs

import (
	"os"
	"strings"
	"testing"
)

// Every note must be in the migration guide's table, so the guide cannot
// drift from what loading says.
func TestCompatNotesAreDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/migrating.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range compatNotes {
		if !strings.Contains(string(doc), "| `"+n.path+"` |") {
			t.Errorf("%s: not in docs/migrating.md", n.path)
		}
	}
	for name := range compatEnvNotes {
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("%s: not in docs/migrating.md", name)
		}
	}
}

func TestCompatNoteRetiresWhenTheKeyBecomesAField(t *testing.T) {
	type withStreaming struct {
		ChannelCommon
		Streaming bool `json:"streaming"`
	}
	for _, tt := range []struct {
		platforms map[string]any
		wantWarn  bool
	}{
		{map[string]any{"discord": ChannelCommon{}}, true},
		{map[string]any{"discord": withStreaming{}}, false},
	} {
		tree := map[string]any{"channels": map[string]any{"discord": map[string]any{"enabled": true, "streaming": true}}}
		got := applyCompat(tree, tt.platforms)
		if warned := len(got) == 1 && got[0].Path == "channels.discord.streaming"; warned != tt.wantWarn {
			t.Errorf("platform type %T: findings %+v, want a warning: %v", tt.platforms["discord"], got, tt.wantWarn)
		}
		_, kept := tree["channels"].(map[string]any)["discord"].(map[string]any)["streaming"]
		if kept == tt.wantWarn {
			t.Errorf("platform type %T: streaming kept = %v", tt.platforms["discord"], kept)
		}
	}
}

func TestCompatEnv(t *testing.T) {
	dir := t.TempDir()
	l, err := Load(Options{Path: dir + "/none.json", Environ: []string{
		"NANOBOT_LLM_TIMEOUT_S=42", "NANOBOT_STREAM_IDLE_TIMEOUT_S=7", "NANOBOT_MAX_CONCURRENT_REQUESTS=3", "LANGFUSE_SECRET_KEY=sk-lf-secret",
	}})
	if err != nil {
		t.Fatal(err)
	}
	d := l.Config.Agents.Defaults
	if d.RequestTimeoutS != 42 || d.StreamIdleTimeoutS != 7 || d.MaxConcurrentTurns != 3 {
		t.Errorf("requestTimeoutS %d streamIdleTimeoutS %d maxConcurrentTurns %d", d.RequestTimeoutS, d.StreamIdleTimeoutS, d.MaxConcurrentTurns)
	}
	// The Langfuse variables are read by agent/langfuse, not the config:
	// no warning, and never the secret.
	for _, w := range l.Warnings {
		if strings.Contains(w, "sk-lf-secret") || strings.Contains(w, "LANGFUSE") {
			t.Errorf("warning about the Langfuse variables: %s", w)
		}
	}
	if _, err := Load(Options{Path: dir + "/none.json", Environ: []string{"NANOBOT_LLM_TIMEOUT_S=soon"}}); err == nil || !strings.Contains(err.Error(), "NANOBOT_LLM_TIMEOUT_S") {
		t.Errorf("bad value: err = %v", err)
	}
}
