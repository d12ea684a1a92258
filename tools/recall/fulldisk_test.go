package recall

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
	"github.com/nanobot-go/nanobot/internal/syncbuf"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

var errDiskFull = errors.New("no space left on device (simulated)")

// fullDisk takes 100 bytes of a save, then fails as a full disk does.
type fullDisk struct{ w io.Writer }

func (f fullDisk) Write(p []byte) (int, error) {
	n, _ := f.w.Write(p[:min(len(p), 100)])
	return n, errDiskFull
}

// TestIndexSaveOnAFullDisk: a save that fails leaves the saved index as
// it was and no temporary file, is logged, and keeps the index in memory
// and searchable (the idle unload lets go of nothing it could not save);
// what the failed save held is read again from the files later, so
// nothing is lost.
func TestIndexSaveOnAFullDisk(t *testing.T) {
	ws := t.TempDir()
	f := newFeed()
	f.add("a.jsonl", msg("t:1", "the boat is called Aurora"))
	first := NewIndex(IndexOptions{Workspace: ws, Feed: f})
	if _, _, err := first.Search(context.Background(), "boat", 5, Scope{}); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(ws, IndexDir, "index.gob")
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	var logs syncbuf.Buffer
	full := atomicfile.Options{Wrap: func(w io.Writer) io.Writer { return fullDisk{w} }}
	x := NewIndex(IndexOptions{Workspace: ws, Feed: f, Logger: logger(&logs), Idle: 50 * time.Millisecond, write: full})
	f.add("a.jsonl", msg("t:1", "the boat's mooring is in Brest"))
	if hits, _, err := x.Search(context.Background(), "mooring", 5, Scope{}); err != nil || len(hits) != 1 {
		t.Fatalf("search: %v %v", hits, err)
	}
	waitfor.Within(t, "the idle unload's failed save logged", 10*time.Second, func() bool {
		return strings.Contains(logs.String(), "save failed; keeping it in memory")
	})
	f.readLog()
	if hits, _, err := x.Search(context.Background(), "mooring Brest", 5, Scope{}); err != nil || len(hits) != 1 {
		t.Errorf("after the failed save: %v %v", hits, err)
	}
	if got := f.readLog(); len(got) != 0 {
		t.Errorf("the index was let go and read again (%v); want it kept in memory", got)
	}
	if err := x.Close(); !errors.Is(err, errDiskFull) {
		t.Errorf("Close on a full disk: %v, want the disk-full error", err)
	}
	if now, _ := os.ReadFile(path); string(now) != string(saved) {
		t.Errorf("the saved index changed after failed saves")
	}
	if left, _ := filepath.Glob(filepath.Join(ws, IndexDir, ".*tmp*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}

	// Space again: the next index reads on from the old save and finds all.
	tl, _ := open(t, ws, f, nil)
	if got := search(t, tl, "boat mooring", 5); !strings.Contains(got, "Aurora") || !strings.Contains(got, "Brest") {
		t.Errorf("after the disk had space again:\n%s", got)
	}
}
