package journal

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/nanobot-go/nanobot/gateway/bus"
)

func TestReplayUnfinished(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox.jsonl")
	j, replay, err := Open(path, Options{})
	if err != nil || len(replay) != 0 {
		t.Fatalf("open: %v %v", replay, err)
	}
	a, _ := j.Add(bus.Inbound{Channel: "tg", ChatID: "1", MessageID: "10", Content: "a"})
	b, _ := j.Add(bus.Inbound{Channel: "tg", ChatID: "1", MessageID: "11", Content: "b"})
	c, _ := j.Add(bus.Inbound{Channel: "tg", ChatID: "2", MessageID: "10", Content: "c"})
	if err := j.Done(b.ID); err != nil {
		t.Fatal(err)
	}
	// Simulate kill -9: no Close, plus a torn last line.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	_, _ = f.WriteString(`{"op":"add","id":"99","msg":{"chan`)
	_ = f.Close()

	j2, replay, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(replay) != 2 || replay[0].ID != a.ID || replay[1].ID != c.ID || replay[0].Content != "a" {
		t.Fatalf("replay = %+v", replay)
	}
	// Dedup survives the restart, and new ids do not collide.
	if _, err := j2.Add(bus.Inbound{Channel: "tg", ChatID: "1", MessageID: "11"}); !errors.Is(err, ErrDuplicate) {
		t.Errorf("redelivered done message: %v", err)
	}
	d, err := j2.Add(bus.Inbound{Channel: "tg", ChatID: "1", MessageID: "12"})
	if err != nil || d.ID == a.ID || d.ID == c.ID {
		t.Errorf("new message id %q (err %v)", d.ID, err)
	}
	for _, id := range []string{a.ID, c.ID, d.ID} {
		if err := j2.Done(id); err != nil {
			t.Fatal(err)
		}
	}
	_ = j2.Close()
	_, replay, _ = Open(path, Options{})
	if len(replay) != 0 {
		t.Errorf("after all done, replay = %v", replay)
	}
}

func TestCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox.jsonl")
	j, _, _ := Open(path, Options{CompactAfter: 10, DedupKeys: 5})
	keep, _ := j.Add(bus.Inbound{Channel: "x", ChatID: "1", MessageID: "keep"})
	for i := range 25 {
		m, err := j.Add(bus.Inbound{Channel: "x", ChatID: "1", MessageID: string(rune('a' + i))})
		if err != nil {
			t.Fatal(err)
		}
		_ = j.Done(m.ID)
	}
	fi, _ := os.Stat(path)
	if fi.Size() > 2000 {
		t.Errorf("journal not compacted: %d bytes", fi.Size())
	}
	_ = j.Close()
	_, replay, _ := Open(path, Options{})
	if len(replay) != 1 || replay[0].ID != keep.ID {
		t.Errorf("replay after compaction = %+v", replay)
	}
}
