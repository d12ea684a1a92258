package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/providers/providertest"
)

// From config.json to the chat: a global daily budget stops the second
// one-shot message before the model is called, and says why; the provider's
// rateLimit is accepted and applied on the way.
func TestBudgetFromConfig(t *testing.T) {
	srv := providertest.New(t)
	srv.Handle(func(providertest.Request) providertest.Reply {
		return providertest.Reply{Text: "hello there", Usage: &providertest.Usage{PromptTokens: 1000, CompletionTokens: 100}}
	})
	cfg := filepath.Join(t.TempDir(), "config.json")
	body := fmt.Sprintf(`{
	  "agents": {"defaults": {"model": "test-model", "provider": "vllm", "timezone": "Asia/Tokyo"}},
	  "providers": {"vllm": {"apiBase": %q, "rateLimit": {"rpm": 600, "tpm": 1000000}}},
	  "gateway": {"heartbeat": {"enabled": false}},
	  "limits": {"global": {"dailyTokens": 1000}}
	}`, srv.OpenAIBase())
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "--config", cfg, "agent", "-m", "hi")
	if err != nil || !strings.Contains(out, "hello there") {
		t.Fatalf("first message: %v\n%s", err, out)
	}
	// A one-shot run reports the turn's failure answer as its error.
	_, _, err = run(t, "--config", cfg, "agent", "-m", "and again")
	want := "The assistant has reached its daily token budget (1,000 tokens). It resets at 00:00 on "
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "(Asia/Tokyo). No model was called") {
		t.Errorf("second message over the budget: err = %v\nwant %q… (Asia/Tokyo)", err, want)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("the provider got %d requests, want 1 (none over the budget)", n)
	}
}
