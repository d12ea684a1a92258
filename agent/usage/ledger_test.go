package usage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func openTest(t *testing.T, dir string, opts Options) *Ledger {
	t.Helper()
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	l, err := Open(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func rec(chat string, in, out int64) Record {
	return Record{Agent: "main", Channel: "telegram", Chat: chat, Sender: "u-" + chat, Session: "telegram:" + chat,
		Source: "user", Provider: "openai", Model: "gpt-4o", Input: in, Output: out, Latency: time.Second, Outcome: OutcomeOK}
}

// 50 turns append at once: every record is stored exactly once, whole.
func TestConcurrentAppends(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, Options{})
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			if _, err := l.Append(rec(fmt.Sprint(i), int64(100+i), 10)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := Records(context.Background(), dir, time.UTC, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range got {
		seen[r.Chat]++
	}
	if len(got) != 50 || len(seen) != 50 {
		t.Fatalf("got %d records for %d chats, want 50 and 50", len(got), len(seen))
	}
	for chat, n := range seen {
		if n != 1 {
			t.Errorf("chat %s stored %d times", chat, n)
		}
	}
	if tot := l.Today(Scope{}); tot.Calls != 50 || tot.Input != 50*100+49*50/2 {
		t.Errorf("today's totals = %+v, want 50 calls and %d input tokens", tot, 50*100+49*50/2)
	}
}

// A record round-trips through its line, odd characters included.
func TestRecordRoundTrip(t *testing.T) {
	cost := 0.0125
	want := Record{Time: time.UnixMilli(1767225600123).UTC(), Agent: "main", Channel: "web", Chat: "a\"b\\c\n",
		Sender: "ü|name", Session: "web:x", Source: "cron", Provider: "anthropic", Model: "claude-sonnet-4",
		Input: 1200, CacheRead: 1000, CacheWrite: 100, Output: 80, Reasoning: 20, Latency: 1500 * time.Millisecond,
		Outcome: "http_500", Estimated: true, CostUSD: &cost}
	line := appendLine(nil, &want)
	var raw rawRecord
	if err := parseLine(line[:len(line)-1], &raw); err != nil {
		t.Fatalf("parse %s: %v", line, err)
	}
	if diff := cmp.Diff(want, raw.record()); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// Months rotate with the clock: a file per month, the running totals start
// again, and a query spans both files.
func TestMonthRotation(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{t: time.Date(2026, 1, 31, 23, 0, 0, 0, time.UTC)}
	l := openTest(t, dir, Options{Now: clock.Now})
	for range 2 {
		if _, err := l.Append(rec("1", 100, 10)); err != nil {
			t.Fatal(err)
		}
	}
	clock.Set(time.Date(2026, 2, 1, 0, 30, 0, 0, time.UTC))
	if got := l.ThisMonth(Scope{}); got.Calls != 0 {
		t.Errorf("February before any call: %d calls, want 0", got.Calls)
	}
	if _, err := l.Append(rec("1", 7, 1)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"2026-01.jsonl", "2026-02.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("month file: %v", err)
		}
	}
	if _, got, err := l.Period(context.Background(), Scope{Kind: ScopeChat, ID: "telegram:1"}); err != nil || got.Calls != 1 || got.Input != 7 {
		t.Errorf("February's totals for the chat = %+v, %v; want 1 call of 7 input tokens", got, err)
	}
	s, err := l.Summary(context.Background(), Filter{}, GroupDay)
	if err != nil {
		t.Fatal(err)
	}
	var days []string
	for _, r := range s.Rows {
		days = append(days, fmt.Sprintf("%s:%d", r.Key, r.Calls))
	}
	if diff := cmp.Diff([]string{"2026-01-31:2", "2026-02-01:1"}, days); diff != "" {
		t.Errorf("days (-want +got):\n%s", diff)
	}
	// A ledger opened in February loads February only.
	l2 := openTest(t, dir, Options{Now: clock.Now})
	if got := l2.ThisMonth(Scope{}); got.Calls != 1 {
		t.Errorf("reopened: February has %d calls, want 1", got.Calls)
	}
	if got := l2.Today(Scope{}); got.Calls != 1 {
		t.Errorf("reopened: today has %d calls, want 1", got.Calls)
	}
}

// A crash mid-write leaves a torn last line: readers skip it, and the next
// append starts on a fresh line instead of gluing onto it.
func TestTornLastLine(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{t: time.Date(2026, 3, 5, 12, 0, 0, 0, time.UTC)}
	l := openTest(t, dir, Options{Now: clock.Now})
	for range 3 {
		if _, err := l.Append(rec("1", 10, 1)); err != nil {
			t.Fatal(err)
		}
	}
	_ = l.Close()
	path := filepath.Join(dir, "2026-03.jsonl")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"ts":1772712000000,"agent":"main","ch":"tele`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	s, err := Summarize(context.Background(), dir, time.UTC, Filter{}, GroupNone)
	if err != nil {
		t.Fatal(err)
	}
	if s.Total.Calls != 3 || s.Skipped != 1 {
		t.Errorf("with a torn line: %d calls, %d skipped; want 3 and 1", s.Total.Calls, s.Skipped)
	}
	l2 := openTest(t, dir, Options{Now: clock.Now})
	if got := l2.ThisMonth(Scope{}); got.Calls != 3 {
		t.Errorf("totals loaded past the torn line: %d calls, want 3", got.Calls)
	}
	if _, err := l2.Append(rec("2", 5, 1)); err != nil {
		t.Fatal(err)
	}
	got, err := Records(context.Background(), dir, time.UTC, Filter{Session: "telegram:2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Input != 5 {
		t.Errorf("the record after the torn line: %+v, want one record of 5 input tokens", got)
	}
}

// Cluster workers write their own parts; a query and the running totals
// merge them all.
func TestClusterPartsMerged(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{t: time.Date(2026, 4, 10, 9, 0, 0, 0, time.UTC)}
	w1 := openTest(t, dir, Options{Worker: "w1", Now: clock.Now})
	w2 := openTest(t, dir, Options{Worker: "w2", Now: clock.Now})
	if _, err := w1.Append(rec("1", 100, 10)); err != nil {
		t.Fatal(err)
	}
	r2 := rec("2", 200, 20)
	r2.Channel = "slack"
	if _, err := w2.Append(r2); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"2026-04.w1.jsonl", "2026-04.w2.jsonl"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("part: %v", err)
		}
	}
	s, err := w1.Summary(context.Background(), Filter{}, GroupChannel)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, r := range s.Rows {
		rows = append(rows, fmt.Sprintf("%s:%d", r.Key, r.Input))
	}
	if diff := cmp.Diff([]string{"slack:200", "telegram:100"}, rows); diff != "" {
		t.Errorf("channels (-want +got):\n%s", diff)
	}
	w3 := openTest(t, dir, Options{Worker: "w3", Now: clock.Now})
	if got := w3.ThisMonth(Scope{}); got.Calls != 2 || got.Input != 300 {
		t.Errorf("a new worker's month totals = %+v, want 2 calls, 300 input tokens", got)
	}
}

func TestFilterAndGroupings(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{t: time.Date(2026, 5, 2, 9, 0, 0, 0, time.UTC)}
	l := openTest(t, dir, Options{Now: clock.Now})
	add := func(r Record) {
		t.Helper()
		if _, err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	a := rec("1", 1000, 100)
	add(a)
	hb := rec("1", 500, 5)
	hb.Source, hb.Sender = "heartbeat", ""
	add(hb)
	unknown := rec("2", 10, 10)
	unknown.Model, unknown.Outcome = "mystery-1", OutcomeTimeout
	add(unknown)
	clock.Set(clock.Now().Add(48 * time.Hour))
	add(rec("1", 1, 1))

	ctx := context.Background()
	s, err := l.Summary(ctx, Filter{Until: time.Date(2026, 5, 3, 0, 0, 0, 0, time.UTC)}, GroupModel)
	if err != nil {
		t.Fatal(err)
	}
	if s.Total.Calls != 3 || s.Total.Errors != 1 || s.Total.Unpriced != 1 {
		t.Errorf("total = %+v, want 3 calls, 1 error, 1 unpriced", s.Total)
	}
	if len(s.Rows) != 2 || s.Rows[0].Key != "openai/gpt-4o" || s.Rows[1].Key != "openai/mystery-1" || s.Rows[1].Cost() != nil {
		t.Errorf("rows = %+v, want gpt-4o (priced) then mystery-1 (cost unknown)", s.Rows)
	}
	if hbTot := s.Sources["heartbeat"]; hbTot.Calls != 1 || hbTot.Input != 500 {
		t.Errorf("heartbeat shown apart = %+v, want 1 call of 500", hbTot)
	}
	s, err = l.Summary(ctx, Filter{Session: "telegram:1", Source: "user"}, GroupSender)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Rows) != 1 || s.Rows[0].Key != "telegram:u-1" || s.Rows[0].Calls != 2 {
		t.Errorf("by sender = %+v, want telegram:u-1 with 2 calls", s.Rows)
	}
	// Each day's row splits by source, for the workbench's charts.
	s, err = l.Summary(ctx, Filter{}, GroupDay)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Rows) != 2 || s.Rows[0].Key != "2026-05-02" || s.Rows[1].Key != "2026-05-04" {
		t.Fatalf("by day = %+v, want 2026-05-02 and 2026-05-04", s.Rows)
	}
	if d := s.Rows[0].Sources; len(d) != 2 || d["user"].Calls != 2 || d["heartbeat"].Calls != 1 || d["heartbeat"].Input != 500 {
		t.Errorf("sources of 2026-05-02 = %+v, want 2 user calls and 1 heartbeat call of 500", d)
	}
	if d := s.Rows[1].Sources; len(d) != 1 || d["user"].Calls != 1 {
		t.Errorf("sources of 2026-05-04 = %+v, want 1 user call", d)
	}
	if s.Total.Sources != nil {
		t.Errorf("the total carries sources %+v; they are in Summary.Sources", s.Total.Sources)
	}
	if _, err := ParseGroupBy("week"); err == nil {
		t.Error("grouping by week accepted")
	}
}
