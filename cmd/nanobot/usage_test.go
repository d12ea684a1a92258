package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent/usage"
)

// prepareLedger writes calls of three models (one without a price), one of
// them by the heartbeat, into the ledger of the instance in dir.
func prepareLedger(t *testing.T, dir string) {
	t.Helper()
	led, err := usage.Open(t.Context(), filepath.Join(dir, "usage"), usage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	now := time.Now().Add(-time.Hour)
	for _, r := range []usage.Record{
		{Provider: "openai", Model: "gpt-4o", Input: 1_000_000, Output: 100_000, Source: "user", Channel: "telegram"},
		{Provider: "openai", Model: "gpt-4o", Input: 1_000_000, CacheRead: 1_000_000, Source: "heartbeat", Channel: "telegram"},
		{Provider: "anthropic", Model: "claude-sonnet-4", Input: 10, Output: 10, Source: "cron", Channel: "slack"},
		{Provider: "custom", Model: "house-model", Input: 500, Output: 50, Source: "user", Channel: "web"},
		{Provider: "openai", Model: "gpt-4o", Input: 5, Source: "user", Time: now.AddDate(0, 0, -40)}, // outside --since 30d
	} {
		if r.Time.IsZero() {
			r.Time = now
		}
		r.Outcome = usage.OutcomeOK
		if _, err := led.Append(r); err != nil {
			t.Fatal(err)
		}
	}
}

func TestUsageByModelJSON(t *testing.T) {
	dir := t.TempDir()
	prepareLedger(t, dir)
	out, _, err := run(t, "--config", filepath.Join(dir, "config.json"), "usage", "--by", "model", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		By         string `json:"by"`
		PricesAsOf string `json:"pricesAsOf"`
		Rows       []struct {
			Key     string   `json:"key"`
			Calls   int      `json:"calls"`
			Input   int      `json:"input"`
			CostUSD *float64 `json:"costUsd"`
		} `json:"rows"`
		Total struct {
			Calls    int      `json:"calls"`
			CostUSD  *float64 `json:"costUsd"`
			Unpriced int      `json:"unpriced"`
		} `json:"total"`
		Sources map[string]struct {
			Calls int `json:"calls"`
		} `json:"sources"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.By != "model" || got.PricesAsOf != usage.PricesAsOf || len(got.Rows) != 3 {
		t.Fatalf("by %q, prices as of %q, %d rows; want model, %s, 3:\n%s", got.By, got.PricesAsOf, len(got.Rows), usage.PricesAsOf, out)
	}
	// gpt-4o: 1M input at $2.50 + 100k output at $10, then 1M cached at $1.25.
	first := got.Rows[0]
	if first.Key != "openai/gpt-4o" || first.Calls != 2 || first.CostUSD == nil || *first.CostUSD < 4.7499 || *first.CostUSD > 4.7501 {
		t.Errorf("first row = %+v, want openai/gpt-4o, 2 calls, $4.75", first)
	}
	last := got.Rows[2]
	if last.Key != "custom/house-model" || last.CostUSD != nil {
		t.Errorf("last row = %+v, want custom/house-model with an unknown (null) cost", last)
	}
	if got.Total.Calls != 4 || got.Total.Unpriced != 1 || got.Total.CostUSD == nil {
		t.Errorf("total = %+v, want 4 calls, 1 unpriced, a partial cost", got.Total)
	}
	if got.Sources["heartbeat"].Calls != 1 || got.Sources["cron"].Calls != 1 || got.Sources["user"].Calls != 2 {
		t.Errorf("sources = %+v", got.Sources)
	}
}

func TestUsageTable(t *testing.T) {
	dir := t.TempDir()
	prepareLedger(t, dir)
	out, _, err := run(t, "--config", filepath.Join(dir, "config.json"), "usage", "--by", "channel", "--since", "7d")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CHANNEL", "telegram", "$4.75", "web", "?", "TOTAL", "+?", "of which heartbeat", "of which cron", "Prices as of"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if _, _, err := run(t, "--config", filepath.Join(dir, "config.json"), "usage", "--by", "week"); err == nil || !strings.Contains(err.Error(), "--by") {
		t.Errorf("--by week: %v", err)
	}
	if _, _, err := run(t, "--config", filepath.Join(dir, "config.json"), "usage", "--since", "yesterday"); err == nil || !strings.Contains(err.Error(), "--since") {
		t.Errorf("--since yesterday: %v", err)
	}
}
