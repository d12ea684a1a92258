package usage

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadChunksSmallFiles reads files smaller and larger than the
// buffer it sizes for them, with lines longer than it, and gets every
// whole line once, in order, and no torn one.
func TestReadChunksSmallFiles(t *testing.T) {
	long := strings.Repeat("x", 3*minChunk)
	for name, lines := range map[string][]string{
		"tiny":        {"a", "b"},
		"one long":    {long},
		"long inside": {"a", long, "b", long + long, "c"},
		"many":        strings.Split(strings.Repeat("line of text\n", 5000), "\n")[:5000],
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.jsonl")
			if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if got := bufferFor(path); got >= chunkSize {
				t.Errorf("buffer for a small file is %d bytes", got)
			}
			var got []string
			err := readChunks(context.Background(), path, func(c []byte) {
				for _, l := range bytes.Split(bytes.TrimSuffix(c, []byte("\n")), []byte("\n")) {
					got = append(got, string(l))
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "\n") != strings.Join(lines, "\n") {
				t.Errorf("read %d lines, want %d; first differs: %.40q", len(got), len(lines), firstDiff(got, lines))
			}
		})
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i]
		}
	}
	return "(lengths differ)"
}
