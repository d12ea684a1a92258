package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecallSmoke runs the recall benchmark small and checks the page
// section it writes: the driver works, the facts are found (by words,
// every question's fact in the first five for most questions), and a
// second run replaces the section rather than adding one.
func TestRecallSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and searches a few thousand messages")
	}
	page := filepath.Join(t.TempDir(), "benchmarks.md")
	if err := os.WriteFile(page, []byte("# Benchmarks\n\n## Peers\n\nkept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := recallMain([]string{"-lines", "2000", "-queries", "20", "-out", page}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	if strings.Count(got, recallSectionTitle) != 1 || !strings.Contains(got, "## Peers\n\nkept") {
		t.Errorf("the page after two runs:\n%s", got)
	}
	for _, want := range []string{"| words (BM25) |", "| hybrid (BM25 + trigram test embedder) |", "answered from memory end to end", "p50 / p99 of 20 searches", "| on disk |"} {
		if !strings.Contains(got, want) {
			t.Errorf("the section lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "| words (BM25) | 0 % | 0 % |") {
		t.Errorf("memory_search found none of the planted facts:\n%s", got)
	}
}
