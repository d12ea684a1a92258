package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/openai"
	"github.com/nanobot-go/nanobot/providers/providertest"
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

// TestMemorySearchEmbedsMeteredAndBudgeted: with an embedding model,
// memory_search's index embeds the stored messages and the query through
// the provider's /embeddings (a local OpenAI-compatible server), finds a
// message worded differently from the question, and every embedding call
// is in the usage ledger under its model; once the budget is used up the
// embeddings are refused and the search goes on by words.
func TestMemorySearchEmbedsMeteredAndBudgeted(t *testing.T) {
	srv := providertest.New(t)
	client, err := openai.New(openai.Options{Endpoint: providers.Endpoint{Name: "openai", APIKey: "sk-emb", APIBase: srv.OpenAIBase()}})
	if err != nil {
		t.Fatal(err)
	}
	calls := func() int {
		n := 0
		for _, r := range srv.Requests() {
			if r.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer sk-emb" || r.Model != "text-embedding-3-small" {
				t.Errorf("embedding request %s %s model %q", r.Method, r.Path, r.Model)
			}
			n++
		}
		return n
	}
	led, err := usage.Open(t.Context(), t.TempDir(), usage.Options{Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	cfg := configs.Default()
	cfg.Agents.Defaults.Workspace = t.TempDir()
	paths := configs.PathsFor(filepath.Join(t.TempDir(), "config.json"), &cfg)
	store, err := session.NewFileStore(t.TempDir(), session.FileStoreOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, _ := store.Load(ctx, "telegram:42")
	if err := store.Append(ctx, s, providers.Message{Role: "user", Content: "Booked the flights to Lisbon for the conference"}); err != nil {
		t.Fatal(err)
	}
	reg := tools.NewRegistry()
	budgets := usage.NewBudgets(led, usage.Limits{Global: usage.Budget{DailyTokens: 40}}, nil)
	a, err := New(&cfg, paths, Deps{Provider: &fakeLLM{}, Model: "m", Tools: reg, Store: store, Out: &outbox{}, Usage: led, Budgets: budgets,
		Embedding: &Embedding{Client: client, Model: "text-embedding-3-small", Provider: "openai"}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Recall.Close()
	res, err := reg.Execute(ctx, "memory_search", map[string]any{"query": "which flight to Lisbon's conferences"})
	if err != nil || !strings.Contains(res.Content, "Booked the flights to Lisbon") {
		t.Fatalf("hybrid search: %v\n%s", err, res.Content)
	}
	if calls() != 2 {
		t.Errorf("%d embedding calls, want 2 (the message, the query)", calls())
	}
	sum, err := led.Summary(ctx, usage.Filter{}, usage.GroupModel)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Rows) != 1 || sum.Rows[0].Key != "openai/text-embedding-3-small" || sum.Rows[0].Input == 0 {
		t.Errorf("ledger rows %+v, want the embedding calls with their tokens", sum.Rows)
	}
	// The budget of 40 tokens a day is used up after a few more calls;
	// searches go on, by words.
	for i := range 10 {
		if err := store.Append(ctx, s, providers.Message{Role: "user", Content: fmt.Sprintf("note %d about the Lisbon conference schedule and its many sessions", i)}); err != nil {
			t.Fatal(err)
		}
		if res, err = reg.Execute(ctx, "memory_search", map[string]any{"query": "Lisbon conference"}); err != nil || !strings.Contains(res.Content, "Lisbon") {
			t.Fatalf("search %d with the budget used up: %v\n%s", i, err, res.Content)
		}
	}
	// Each call is let through only while the day's total is under the
	// budget, so the overshoot is at most the last call's.
	if today := led.Today(usage.Scope{}); today.Input > 40+20 {
		t.Errorf("%d tokens spent on embeddings against a budget of 40", today.Input)
	}
	if n := calls(); n >= 2+20 {
		t.Errorf("%d embedding calls: the used-up budget did not stop them", n)
	}
	t.Logf("%d embedding calls, %d tokens", calls(), led.Today(usage.Scope{}).Input)
}
