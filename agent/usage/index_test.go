package usage

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// sameSummary compares two answers; costs are float sums whose order
// varies with the goroutines, so they are compared to within 1e-9, and so
// is the order of rows of (nearly) equal cost: rows are compared by key.
func sameSummary(t *testing.T, what string, want, got *Summary) {
	t.Helper()
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Row{}), cmpopts.EquateApprox(0, 1e-9),
		cmpopts.SortSlices(func(a, b Row) bool { return a.Key < b.Key })); diff != "" {
		t.Errorf("%s (-ledger only +with index):\n%s", what, diff)
	}
}

// checkAgainstLedger runs every grouping and some filters with the index
// and without it, and wants the same answers.
func checkAgainstLedger(t *testing.T, dir, when string) {
	t.Helper()
	ctx := context.Background()
	filters := []Filter{{}, {Source: "heartbeat"}, {Channel: "slack", Since: time.Date(2026, 2, 10, 0, 0, 0, 0, time.UTC)},
		{Session: "telegram:7", Until: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}, {Agent: "main", Sender: "12"}}
	for _, by := range []GroupBy{GroupNone, GroupDay, GroupModel, GroupChannel, GroupAgent, GroupSender, GroupSource} {
		for _, f := range filters {
			want, err := summarize(ctx, dir, time.UTC, f, by, false)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Summarize(ctx, dir, time.UTC, f, by)
			if err != nil {
				t.Fatal(err)
			}
			sameSummary(t, when+" by "+string(by), want, got)
		}
	}
}

// The index gives the answers the ledger gives: on the query that builds
// it, on the queries that use it, with odd lines (escapes, garbage, a torn
// last line) in the files, after more calls are appended, after a file is
// replaced by a shorter one, and after the index itself is damaged.
func TestIndexMatchesLedger(t *testing.T) {
	dir := t.TempDir()
	writeLedger(t, dir, 60_000) // three months of about 4.3 MB each
	jan := filepath.Join(dir, "2026-01.jsonl")
	odd := Record{Time: time.Date(2026, 1, 31, 23, 0, 0, 0, time.UTC), Agent: "main", Channel: "web", Chat: `a "quoted" chat`,
		Sender: "ü\\x", Session: "web:1", Source: "cron", Provider: "openai", Model: "gpt-4o", Input: 10, Output: 5, Outcome: OutcomeOK}
	f, err := os.OpenFile(jan, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(appendLine(nil, &odd))
	f.WriteString("this is not json\n")
	f.Write(appendLine(nil, &odd))
	f.WriteString(`{"ts":17692`) // torn
	f.Close()

	checkAgainstLedger(t, dir, "first query")
	for _, m := range []string{"2026-01", "2026-02", "2026-03"} {
		if _, err := os.Stat(filepath.Join(dir, m+".jsonl.idx")); err != nil {
			t.Fatalf("no index after a query: %v", err)
		}
	}
	checkAgainstLedger(t, dir, "indexed")

	// More calls: the tail after the index is parsed.
	l := openTest(t, dir, Options{Now: func() time.Time { return time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC) }})
	for i := range 300 {
		r := rec("7", int64(i), 1)
		r.Sender = "12"
		if _, err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	checkAgainstLedger(t, dir, "after appends")

	// February replaced by a shorter file: its index no longer fits.
	feb := filepath.Join(dir, "2026-02.jsonl")
	short := Record{Time: time.Date(2026, 2, 14, 9, 0, 0, 0, time.UTC), Agent: "main", Channel: "slack", Session: "slack:1", Source: "user",
		Provider: "openai", Model: "gpt-4o", Input: 123, Output: 45, Outcome: OutcomeOK}
	if err := os.WriteFile(feb, appendLine(nil, &short), 0o600); err != nil {
		t.Fatal(err)
	}
	checkAgainstLedger(t, dir, "after February was replaced")
	s, err := Summarize(context.Background(), dir, time.UTC, Filter{Since: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}, GroupNone)
	if err != nil || s.Total.Calls != 1 || s.Total.Input != 123 {
		t.Fatalf("February after the replacement: %+v, %v; want the one call of 123", s.Total, err)
	}

	// A damaged index (a byte flipped in its middle, garbage at its end).
	idx := jan + indexSuffix
	b, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	b = append(b, "garbage"...)
	if err := os.WriteFile(idx, b, 0o600); err != nil {
		t.Fatal(err)
	}
	checkAgainstLedger(t, dir, "with a damaged index")
	checkAgainstLedger(t, dir, "with the index rebuilt")
}

// Queries at once (the workbench asks three) may each append the same
// blocks; the duplicates are skipped and the answers stay right.
func TestIndexConcurrentQueries(t *testing.T) {
	dir := t.TempDir()
	writeLedger(t, dir, 30_000)
	want, err := summarize(context.Background(), dir, time.UTC, Filter{}, GroupModel, false)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		var wg sync.WaitGroup
		got := make([]*Summary, 4)
		for i := range got {
			wg.Go(func() {
				s, err := Summarize(context.Background(), dir, time.UTC, Filter{}, GroupModel)
				if err != nil {
					t.Error(err)
				}
				got[i] = s
			})
		}
		wg.Wait()
		for _, s := range got {
			if s != nil {
				sameSummary(t, "concurrent round "+string(rune('0'+round)), want, s)
			}
		}
	}
}
