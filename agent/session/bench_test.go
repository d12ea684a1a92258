package session

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"testing"

	"github.com/nanobot-go/nanobot/providers"
)

// turnMessages returns n messages of realistic shape: user, assistant with a
// tool call, tool result, assistant answer, repeated.
func turnMessages(n int) []providers.Message {
	out := make([]providers.Message, 0, n)
	for i := 0; len(out) < n; i++ {
		id := fmt.Sprint("call_", i)
		for _, m := range []providers.Message{
			u(fmt.Sprintf("question %d: can you check the logs of the service for errors?", i)),
			ac("Let me look.", id),
			{Role: providers.RoleTool, ToolCallID: id, Name: "exec", Content: "2026-03-01 12:00:00 INFO started\n2026-03-01 12:00:01 WARN slow disk\n"},
			a(fmt.Sprintf("Answer %d: the service started fine; there is one warning about a slow disk.", i)),
		} {
			if len(out) < n {
				out = append(out, m)
			}
		}
	}
	return out
}

func benchStore(b *testing.B, dir string, opts FileStoreOptions) *FileStore {
	b.Helper()
	opts.Logger = slog.New(slog.DiscardHandler)
	f, err := NewFileStore(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	return f
}

// BenchmarkAppend appends one message to a session of 1000 messages.
func BenchmarkAppend(b *testing.B) {
	for _, sync := range []bool{false, true} {
		b.Run(fmt.Sprintf("fsync=%v", sync), func(b *testing.B) {
			ctx := context.Background()
			f := benchStore(b, b.TempDir(), FileStoreOptions{NoSync: !sync})
			s, _ := f.Load(ctx, "bench:1")
			if err := f.Append(ctx, s, turnMessages(1000)...); err != nil {
				b.Fatal(err)
			}
			m := u("one more question about the logs, please")
			b.ReportAllocs()
			for b.Loop() {
				if err := f.Append(ctx, s, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoad reads a 1000-message session from disk (cold cache).
func BenchmarkLoad(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	f := benchStore(b, dir, FileStoreOptions{NoSync: true})
	s, _ := f.Load(ctx, "bench:1")
	if err := f.Append(ctx, s, turnMessages(1000)...); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(s.file.size)
	b.ReportAllocs()
	for b.Loop() {
		s, err := f.read("bench:1")
		if err != nil || len(s.Messages) != 1000 {
			b.Fatalf("read: %d messages, %v", len(s.Messages), err)
		}
	}
}

// BenchmarkHistory builds the model's view of sessions of several sizes.
func BenchmarkHistory(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := &Session{Key: "bench:1", Messages: turnMessages(n)}
			b.ReportAllocs()
			for b.Loop() {
				if h := s.History(0); len(h) == 0 {
					b.Fatal("empty history")
				}
			}
		})
	}
}

// BenchmarkSessions10k loads 10,000 stored sessions of 20 messages each
// through a store with the default cache, drops them, and reports the heap
// that stays (MB-retained), next to the heap with all 10,000 in memory
// (MB-all-held).
func BenchmarkSessions10k(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	const n = 10_000
	setup := benchStore(b, dir, FileStoreOptions{NoSync: true, MaxCached: 1})
	msgs := turnMessages(20)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprint("telegram:", 1_000_000+i)
		s, _ := setup.Load(ctx, keys[i])
		if err := setup.Append(ctx, s, msgs...); err != nil {
			b.Fatal(err)
		}
	}
	heap := func() float64 {
		runtime.GC()
		runtime.GC() // the second cycle frees what weak-entry cleanups released
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return float64(ms.HeapAlloc) / (1 << 20)
	}
	var retained, allHeld float64
	var cached int
	for b.Loop() {
		base := heap()
		f := benchStore(b, dir, FileStoreOptions{NoSync: true})
		held := make([]*Session, n)
		for i, k := range keys {
			s, err := f.Load(ctx, k)
			if err != nil {
				b.Fatal(err)
			}
			held[i] = s
		}
		allHeld = heap() - base
		runtime.KeepAlive(held)
		held = nil
		retained = heap() - base
		cached = f.cache.len()
		runtime.KeepAlive(f)
	}
	b.ReportMetric(allHeld, "MB-all-held")
	b.ReportMetric(retained, "MB-retained")
	b.ReportMetric(float64(cached), "cached")
}
