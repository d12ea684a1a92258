package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
)

func TestDedupSetRing(t *testing.T) {
	d := newDedupSet(3)
	for _, k := range []string{"a", "b", "c", "d"} {
		d.add(hashKey(k))
	}
	if d.has(hashKey("a")) || !d.has(hashKey("b")) || !d.has(hashKey("d")) {
		t.Fatal("ring did not drop exactly the oldest key")
	}
	d.add(hashKey("d")) // already there: no eviction
	if !d.has(hashKey("b")) {
		t.Fatal("adding a remembered key evicted another")
	}
	var order []uint64
	d.each(func(h uint64) { order = append(order, h) })
	want := []uint64{hashKey("b"), hashKey("c"), hashKey("d")}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("each = %v, want oldest first %v", order, want)
	}
	for _, h := range want {
		if parseStored(formatStored(h)) != h {
			t.Fatalf("stored form of %x does not read back", h)
		}
	}
	if parseStored("#zz") != hashKey("#zz") {
		t.Fatal("a malformed stored hash is not treated as a key")
	}
}

// A journal compacted by an older version stored the keys themselves; they
// still deduplicate after the upgrade, and the dedup window stays bounded
// across compactions.
func TestDedupLegacyKeysAndBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox.jsonl")
	legacy := `{"op":"seen","key":"tg\u00001\u000010"}` + "\n"
	if err := os.WriteFile(path, []byte(legacy), 0o600); err != nil {
		t.Fatal(err)
	}
	j, _, err := Open(path, Options{DedupKeys: 5, CompactAfter: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Add(bus.Inbound{Channel: "tg", ChatID: "1", MessageID: "10"}); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("legacy key forgotten: %v", err)
	}
	for i := range 8 {
		m, err := j.Add(bus.Inbound{Channel: "tg", ChatID: "1", MessageID: fmt.Sprint(100 + i)})
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Done(m.ID); err != nil {
			t.Fatal(err)
		}
	}
	j2, _, err := Open(path, Options{DedupKeys: 5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j2.Add(bus.Inbound{Channel: "tg", ChatID: "1", MessageID: "107"}); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("recent key forgotten over a compaction and restart: %v", err)
	}
	if _, err := j2.Add(bus.Inbound{Channel: "tg", ChatID: "1", MessageID: "101"}); err != nil {
		t.Fatalf("key older than the window still remembered: %v", err)
	}
	data, _ := os.ReadFile(path)
	if n := countLines(data, `"op":"seen"`); n > 5 {
		t.Fatalf("%d seen lines after compaction, want at most the window (5)", n)
	}
}

func countLines(data []byte, sub string) int {
	n := 0
	for line := range strings.Lines(string(data)) {
		if strings.Contains(line, sub) {
			n++
		}
	}
	return n
}
