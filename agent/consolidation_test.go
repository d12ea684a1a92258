package agent

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent/memory"
	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/internal/syncbuf"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// isConsolidation tells the consolidation call from a turn's: it forces
// the save_memory tool.
func isConsolidation(r providertest.Request) bool {
	return strings.Contains(string(r.Raw), `"save_memory"`)
}

// seedLongHistory stores enough conversation in key that its next prompt
// is over the consolidation budget of consolidationHarness.
func seedLongHistory(t *testing.T, h *harness, key string) {
	t.Helper()
	s, err := h.store.Load(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []providers.Message
	for i := range 12 {
		role := providers.RoleUser
		if i%2 == 1 {
			role = providers.RoleAssistant
		}
		msgs = append(msgs, providers.Message{Role: role, Content: fmt.Sprintf("%s message %d: %s", key, i, strings.Repeat("words and more words ", 60))})
	}
	if err := h.store.Append(t.Context(), s, msgs...); err != nil {
		t.Fatal(err)
	}
}

func cursorOf(t *testing.T, h *harness, key string) int {
	t.Helper()
	s, err := h.store.Load(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	return s.LastConsolidated
}

// Memory consolidation goes through the ledger and the budgets like a
// turn: its calls are recorded under source "consolidation", charged to
// the conversation whose history they fold; while a budget is used up no
// consolidation call is made and nothing is archived (however often it is
// tried), and once the budget allows it the history is folded as usual.
func TestConsolidationMeteredAndWaitsForBudget(t *testing.T) {
	h, srv, led := usageHarness(t)
	logs := &syncbuf.Buffer{}
	mem, err := memory.New(memory.Options{
		Workspace: h.ws, Provider: h.loop.cfg.Runner.Metered(usage.SourceConsolidation), Model: "gpt-4o", Store: h.store,
		ContextWindowTokens: 4000, MaxTokens: 500, Logger: slog.New(slog.NewTextHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	h.loop.cfg.Consolidator = mem
	srv.Handle(func(r providertest.Request) providertest.Reply {
		if isConsolidation(r) {
			return providertest.Reply{
				ToolCalls: []providertest.ToolCall{{ID: "c1", Name: "save_memory", Arguments: `{"history_entry":"[2026-01-01 10:00] talked about words"}`}},
				Usage:     &providertest.Usage{PromptTokens: 2000, CompletionTokens: 100},
			}
		}
		return providertest.Reply{Text: "hello", Usage: &providertest.Usage{PromptTokens: 1000, CompletionTokens: 100}}
	})
	go h.loop.Run(t.Context(), nil)

	seedLongHistory(t, h, "test:c1")
	alice := bus.Inbound{Channel: "test", ChatID: "c1", SenderID: "alice", Content: "hi"}
	if got := h.askFinal(t, alice); got != "hello" {
		t.Fatalf("answer %q, want hello", got)
	}
	if c := cursorOf(t, h, "test:c1"); c == 0 {
		t.Fatal("the history of test:c1 was not consolidated")
	}
	recs, err := usage.Records(t.Context(), led.Dir(), time.UTC, usage.Filter{Source: usage.SourceConsolidation})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatal("no consolidation call in the ledger")
	}
	for _, r := range recs {
		if r.Session != "test:c1" || r.Channel != "test" || r.Chat != "c1" || r.Sender != "alice" || r.Agent != DefaultAgentName ||
			r.Input != 2000 || r.Output != 100 || r.Model != "gpt-4o" || r.CostUSD == nil {
			t.Errorf("consolidation record %+v, want test:c1 / alice / %s, 2000 in, 100 out, priced gpt-4o", r, DefaultAgentName)
		}
	}
	s, err := led.Summary(t.Context(), usage.Filter{}, usage.GroupNone)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Sources[usage.SourceConsolidation].Calls; got != int64(len(recs)) {
		t.Errorf("summary: %d consolidation calls, want %d", got, len(recs))
	}

	// Everything so far is over 2,000 tokens: a global cap of 1,000 is used up.
	h.loop.cfg.Runner.Budgets = usage.NewBudgets(led, usage.Limits{Global: usage.Budget{DailyTokens: 1000}}, nil)
	history, err := os.ReadFile(mem.HistoryPath())
	if err != nil {
		t.Fatal(err)
	}
	seedLongHistory(t, h, "test:c2")
	calls := len(srv.Requests())
	bob := bus.Inbound{Channel: "test", ChatID: "c2", SenderID: "bob", Content: "hi"}
	for range 4 { // more than memory's MaxFailures (3): a refusal is not a failure
		if got := h.askFinal(t, bob); !strings.Contains(got, "daily token budget") {
			t.Fatalf("answer over budget %q, want the budget message", got)
		}
	}
	if n := len(srv.Requests()); n != calls {
		t.Errorf("%d provider calls over budget, want none", n-calls)
	}
	if c := cursorOf(t, h, "test:c2"); c != 0 {
		t.Errorf("over budget the cursor of test:c2 moved to %d, want it to wait at 0", c)
	}
	if now, _ := os.ReadFile(mem.HistoryPath()); !bytes.Equal(now, history) {
		t.Errorf("HISTORY.md changed while the budget was used up (raw archive?):\n%.300s", now[len(history):])
	}
	if !strings.Contains(logs.String(), "consolidation waits until it resets") {
		t.Errorf("no log line about the waiting consolidation in:\n%s", logs.String())
	}

	// The budget lifted, the waiting history is folded by the model.
	h.loop.cfg.Runner.Budgets = nil
	if got := h.askFinal(t, bob); got != "hello" {
		t.Fatalf("answer %q, want hello", got)
	}
	if c := cursorOf(t, h, "test:c2"); c == 0 {
		t.Error("after the budget was lifted test:c2 was still not consolidated")
	}
	var folded bool
	for _, r := range srv.Requests()[calls:] {
		folded = folded || isConsolidation(r) && strings.Contains(string(r.Raw), "test:c2 message 0")
	}
	if !folded {
		t.Error("no consolidation call carried the waiting history of test:c2")
	}
}
