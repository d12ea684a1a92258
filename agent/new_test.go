package agent

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

// A sub-agent's result comes back to the agent that started it, the
// default one included: it names its agent, so bindings that route its
// chat to another agent do not take it there.
func TestSubagentResultNamesItsAgent(t *testing.T) {
	var got []bus.Inbound
	a, _ := assemble(t, func(_ *configs.Config, d *Deps) {
		d.Provider = &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("done") }}
		d.Inbound = func(_ context.Context, m bus.Inbound) error { got = append(got, m); return nil }
	})
	if err := a.Subagents.Publish(context.Background(), bus.Inbound{Channel: "telegram", ChatID: "1", Source: bus.SourceSubagent}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Agent != configs.DefaultAgent {
		t.Errorf("published %+v, want one message naming agent %q", got, configs.DefaultAgent)
	}
}

// TestOwnToolSchemasCompile compiles the schemas of the tools New adds
// (message, spawn, memory_search, the session tools, image), which it registers with RegisterOwn: their
// compile waits for the first call, and this test stands behind that.
func TestOwnToolSchemasCompile(t *testing.T) {
	_, deps := assemble(t, func(c *configs.Config, _ *Deps) { c.Tools.Image.Enabled = true })
	reg := deps.Tools
	want := []string{"message", "spawn", "memory_search", "list_sessions", "read_session", "search_sessions", "send_session_message", "create_goal", "update_goal", "list_goals", "my", "generate_image"}
	if got := reg.Names(); !slices.Equal(got, want) {
		t.Errorf("New registered %v, want %v", got, want)
	}
	for _, d := range reg.Definitions() {
		if _, err := tools.CompileSchema(d.Parameters); err != nil {
			t.Errorf("%s: %v", d.Name, err)
		}
	}
}

// TestMemorySearchReadsStoredConversations: memory_search, as New wires
// it, finds what was said in a stored conversation and in one archived by
// /new, through the session store on disk.
func TestMemorySearchReadsStoredConversations(t *testing.T) {
	cfg := configs.Default()
	cfg.Agents.Defaults.Workspace = t.TempDir()
	paths := configs.PathsFor(filepath.Join(t.TempDir(), "config.json"), &cfg)
	store, err := session.NewFileStore(t.TempDir(), session.FileStoreOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	old, _ := store.Load(ctx, "telegram:42")
	if err := store.Append(ctx, old, providers.Message{Role: "user", Content: "the storage unit number is 318"}); err != nil {
		t.Fatal(err)
	}
	if err := store.Archive(ctx, old); err != nil {
		t.Fatal(err)
	}
	cur, _ := store.Load(ctx, "telegram:42")
	if err := store.Append(ctx, cur, providers.Message{Role: "user", Content: "my dentist is Dr. Okafor on Elm Street"}); err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	if _, err := New(&cfg, paths, Deps{Provider: &fakeLLM{}, Model: "m", Tools: reg, Store: store, Out: &outbox{}}); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]string{
		"dentist":             "[conversation telegram:42, the user,",
		"storage unit number": "[conversation telegram:42 (archived), the user,",
	} {
		res, err := reg.Execute(ctx, "memory_search", map[string]any{"query": q})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Content, want) {
			t.Errorf("%q:\n%s\nwant a hit from %s", q, res.Content, want)
		}
	}
}
