package webui

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent/usage"
)

// seedUsage writes a ledger of known calls into a new folder: a user turn
// on 2026-04-29 ($3.50), a heartbeat on 04-30 ($0.036), a cron run on
// 05-01 with a model of unknown price, and one call in March.
func seedUsage(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var now time.Time
	led, err := usage.Open(context.Background(), dir, usage.Options{Location: time.UTC, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	for _, r := range []usage.Record{
		{Time: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), Agent: "main", Channel: "telegram", Source: "user", Provider: "openai", Model: "gpt-4o", Input: 7, Output: 7, Outcome: usage.OutcomeOK},
		{Time: time.Date(2026, 4, 29, 10, 0, 0, 0, time.UTC), Agent: "main", Channel: "telegram", Source: "user", Provider: "openai", Model: "gpt-4o", Input: 1_000_000, Output: 100_000, Outcome: usage.OutcomeOK},
		{Time: time.Date(2026, 4, 30, 9, 0, 0, 0, time.UTC), Agent: "main", Channel: "cli", Source: "heartbeat", Provider: "openai", Model: "gpt-4o-mini", Input: 200_000, Output: 10_000, Outcome: usage.OutcomeOK},
		{Time: time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC), Agent: "main", Channel: "web", Source: "cron", Provider: "openai", Model: "mystery", Input: 5000, Output: 500, Outcome: usage.OutcomeOK},
	} {
		now = r.Time
		if _, err := led.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestUsageAPI(t *testing.T) {
	dir := seedUsage(t)
	b := newBench(t, false, true, func(o *Options) { o.UsageDir, o.UsageLocation = dir, time.UTC })
	if code, _, _ := b.do("GET", "/api/usage", "", nil); code != 401 {
		t.Fatalf("usage before login: %d, want 401", code)
	}
	if code, _, _ := b.login(testPassword); code != 200 {
		t.Fatal("login failed")
	}
	code, body, _ := b.do("GET", "/api/usage?since=7d&by=day", "", nil)
	if code != 200 {
		t.Fatalf("usage: %d %v", code, body)
	}
	rows := body["rows"].([]any)
	if len(rows) != 7 || rows[0].(map[string]any)["key"] != "2026-04-25" || rows[6].(map[string]any)["key"] != "2026-05-01" {
		t.Fatalf("rows %v, want the 7 days 2026-04-25 .. 2026-05-01", rows)
	}
	day := func(i int) map[string]any { return rows[i].(map[string]any) }
	if c := day(4)["costUsd"]; c == nil || math.Abs(c.(float64)-3.5) > 1e-9 || day(4)["input"].(float64) != 1_000_000 {
		t.Errorf("2026-04-29: %v, want 1M in and $3.50", day(4))
	}
	if c := day(6)["costUsd"]; c != nil {
		t.Errorf("2026-05-01 (a model without a price) costs %v, want null", c)
	}
	if c := day(0)["costUsd"]; c == nil || c.(float64) != 0 || day(0)["calls"].(float64) != 0 {
		t.Errorf("an idle day: %v, want 0 calls costing 0", day(0))
	}
	if hb := day(5)["sources"].(map[string]any)["heartbeat"].(map[string]any); hb["calls"].(float64) != 1 {
		t.Errorf("2026-04-30 by source: %v, want its heartbeat call", day(5)["sources"])
	}
	total := body["total"].(map[string]any)
	if total["calls"].(float64) != 3 || total["unpriced"].(float64) != 1 || math.Abs(total["costUsd"].(float64)-3.536) > 1e-9 {
		t.Errorf("total %v, want 3 calls, 1 unpriced, $3.536", total)
	}
	bg := body["background"].(map[string]any)
	if bg["heartbeat"].(map[string]any)["calls"].(float64) != 1 || bg["cron"].(map[string]any)["calls"].(float64) != 1 {
		t.Errorf("background %v, want one heartbeat and one cron call", bg)
	}

	code, body, _ = b.do("GET", "/api/usage?since=30d&by=model", "", nil)
	if code != 200 {
		t.Fatalf("usage by model: %d %v", code, body)
	}
	rows = body["rows"].([]any)
	if len(rows) != 3 || rows[0].(map[string]any)["key"] != "openai/gpt-4o" {
		t.Errorf("by model %v, want gpt-4o first of 3", rows)
	}
	for q, path := range map[string]string{"by=sender": "by", "by=week": "by", "since=yesterday": "since"} {
		if code, body, _ := b.do("GET", "/api/usage?"+q, "", nil); code != 400 || body["path"] != path {
			t.Errorf("GET /api/usage?%s: %d %v, want 400 on path %s", q, code, body, path)
		}
	}

	none := newBench(t, true, false)
	if code, _, _ := none.do("GET", "/api/usage", "", nil); code != 503 {
		t.Errorf("usage without a ledger: %d, want 503", code)
	}
}
