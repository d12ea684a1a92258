package usage

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// writeLedger writes n records spread over three months into dir.
func writeLedger(tb testing.TB, dir string, n int) {
	tb.Helper()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	step := 90 * 24 * time.Hour / time.Duration(n)
	models := []string{"gpt-4o", "gpt-4o-mini", "claude-sonnet-4", "deepseek-chat", "mystery"}
	var w *bufio.Writer
	var f *os.File
	month := ""
	var buf []byte
	for i := range n {
		r := Record{Time: start.Add(time.Duration(i) * step), Agent: "main", Channel: []string{"telegram", "slack", "web"}[i%3],
			Chat: fmt.Sprint(i % 500), Sender: fmt.Sprint(i % 97), Session: "telegram:" + fmt.Sprint(i%500),
			Source: []string{"user", "user", "user", "cron", "heartbeat"}[i%5], Provider: "openai", Model: models[i%len(models)],
			Input: int64(1000 + i%5000), CacheRead: int64(i % 800), Output: int64(50 + i%300), Latency: 1200 * time.Millisecond, Outcome: OutcomeOK}
		if i%5 != 4 {
			c := float64(i%100) / 1e4
			r.CostUSD = &c
		}
		if m := r.Time.Format("2006-01"); m != month {
			if w != nil {
				w.Flush()
				f.Close()
			}
			var err error
			f, err = os.Create(filepath.Join(dir, m+".jsonl"))
			if err != nil {
				tb.Fatal(err)
			}
			w, month = bufio.NewWriterSize(f, 1<<20), m
		}
		buf = appendLine(buf[:0], &r)
		w.Write(buf)
	}
	w.Flush()
	f.Close()
}

// BenchmarkQuery1M sums a million records (three month files, about 250
// bytes a line) grouped by model; the design target is under a second.
func BenchmarkQuery1M(b *testing.B) {
	dir := b.TempDir()
	writeLedger(b, dir, 1_000_000)
	ctx := context.Background()
	defer reportCPU(b)()
	for b.Loop() {
		s, err := Summarize(ctx, dir, time.UTC, Filter{}, GroupModel)
		if err != nil {
			b.Fatal(err)
		}
		if s.Total.Calls != 1_000_000 {
			b.Fatalf("%d calls, want 1000000", s.Total.Calls)
		}
	}
}

// BenchmarkQuery1MByDay is the same query grouped by day.
func BenchmarkQuery1MByDay(b *testing.B) {
	dir := b.TempDir()
	writeLedger(b, dir, 1_000_000)
	ctx := context.Background()
	defer reportCPU(b)()
	for b.Loop() {
		if _, err := Summarize(ctx, dir, time.UTC, Filter{}, GroupDay); err != nil {
			b.Fatal(err)
		}
	}
}

// reportCPU reports the CPU time (user and system, all threads) per
// operation: on a shared machine the wall time also counts the waits for
// a core.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		b.ReportMetric(float64((cpuTime()-start).Milliseconds())/float64(b.N), "cpu-ms/op")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
