package journal

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/internal/wal/waltest"
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

// The record appended after a restart with a torn last line must replay
// (the torn line is cut off, not glued to it).
func TestTornTailDoesNotSwallowNextRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox.jsonl")
	j, _, _ := Open(path, Options{})
	a, _ := j.Add(bus.Inbound{Channel: "tg", ChatID: "1", MessageID: "1", Content: "a"})
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	_, _ = f.WriteString(`~12345678 {"op":"add","id":"2","msg":{"chan`) // kill -9 mid-write
	_ = f.Close()

	j2, replay, err := Open(path, Options{CompactAfter: 1000})
	if err != nil || len(replay) != 1 || replay[0].ID != a.ID {
		t.Fatalf("replay = %+v, %v", replay, err)
	}
	b, err := j2.Add(bus.Inbound{Channel: "tg", ChatID: "1", MessageID: "3", Content: "b"})
	if err != nil {
		t.Fatal(err)
	}
	_, replay, _ = Open(path, Options{})
	if len(replay) != 2 || replay[1].ID != b.ID || replay[1].Content != "b" {
		t.Errorf("replay = %+v, want a and the message added after the torn line", replay)
	}
}

// Message ids stay unique after every message is done and the journal is
// compacted: the outbox keys replies by them.
func TestIDsSurviveCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox.jsonl")
	j, _, _ := Open(path, Options{})
	a, _ := j.Add(bus.Inbound{Channel: "tg", ChatID: "1", MessageID: "1"})
	_ = j.Done(a.ID)
	_ = j.Close()
	j2, _, _ := Open(path, Options{}) // compacts: no add line is left
	_ = j2.Close()
	j3, _, _ := Open(path, Options{})
	b, _ := j3.Add(bus.Inbound{Channel: "tg", ChatID: "1", MessageID: "2"})
	if b.ID == a.ID {
		t.Errorf("id %s handed out twice", b.ID)
	}
}

// Disk full: Add fails and Err says so; the message is not remembered as
// seen (its redelivery is accepted later); once space is back Add works
// without a restart and the journal replays what it should.
func TestDiskFull(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox.jsonl")
	var disk waltest.Disk
	j, _, _ := Open(path, Options{Open: disk.Open})
	a, _ := j.Add(bus.Inbound{Channel: "tg", ChatID: "1", MessageID: "1", Content: "a"})
	disk.SetFull(true)
	m := bus.Inbound{Channel: "tg", ChatID: "1", MessageID: "2", Content: "b"}
	for range 5 {
		if _, err := j.Add(m); err == nil || errors.Is(err, ErrDuplicate) {
			t.Fatalf("add on a full disk: %v", err)
		}
	}
	if j.Err() == nil {
		t.Error("Err is nil while the disk is full")
	}
	disk.SetFull(false)
	b, err := j.Add(m)
	if err != nil {
		t.Fatalf("add after space came back: %v", err)
	}
	if j.Err() != nil {
		t.Errorf("Err = %v after a successful write", j.Err())
	}
	_, replay, _ := Open(path, Options{})
	if len(replay) != 2 || replay[0].ID != a.ID || replay[1].ID != b.ID || replay[1].Content != "b" {
		t.Errorf("replay = %+v", replay)
	}
}

// BenchmarkDoneManyPending marks messages done while 20,000 others wait,
// newest first (the worst order for a scan of the arrival list). Done
// does no search: its cost is the done record's write, whatever waits.
func BenchmarkDoneManyPending(b *testing.B) {
	j, _, err := Open(filepath.Join(b.TempDir(), "journal.jsonl"), Options{CompactAfter: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	add := func(n int) []string {
		ids := make([]string, n)
		for i := range ids {
			m, err := j.Add(bus.Inbound{Channel: "c", ChatID: "x", Content: "hi"})
			if err != nil {
				b.Fatal(err)
			}
			ids[i] = m.ID
		}
		return ids
	}
	add(20000)
	ids := add(b.N)
	b.ResetTimer()
	for i := len(ids) - 1; i >= 0; i-- {
		if err := j.Done(ids[i]); err != nil {
			b.Fatal(err)
		}
	}
}

// A message finished while the disk is full: its done line cannot be
// written. Once the disk has room again the journal must say so before a
// restart, or the restart answers the message a second time (found by
// `go run ./bench soak`: answers shown twice after a full disk and a
// later kill -9, the turn's save and its reply's record having failed
// too, so nothing else stopped the replay).
func TestDiskFullDoneIsWrittenOnceThereIsRoom(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox.jsonl")
	var disk waltest.Disk
	j, _, err := Open(path, Options{Open: disk.Open})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := j.Add(bus.Inbound{Channel: "tg", ChatID: "1", MessageID: "1", Content: "a"})
	disk.SetFull(true)
	if err := j.Done(a.ID); err == nil {
		t.Fatal("Done on a full disk: no error")
	}
	disk.SetFull(false)
	b, err := j.Add(bus.Inbound{Channel: "tg", ChatID: "1", MessageID: "2", Content: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	_, replay, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(replay) != 1 || replay[0].ID != b.ID {
		t.Errorf("replay = %+v, want only b (%s): a was done", replay, b.ID)
	}
}
