package outbox_test

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/gateway/bus"
	"github.com/nanobot-go/nanobot/gateway/outbox"
	"github.com/nanobot-go/nanobot/gateway/wal"
)

// fullDiskFile is an os file whose writes fail with ENOSPC while full is
// set, as on a full disk.
type fullDiskFile struct {
	*os.File
	full *atomic.Bool
}

func (f fullDiskFile) Write(p []byte) (int, error) {
	if f.full.Load() {
		return 0, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}

// TestFullDiskDoesNotRepeatASentReply: the platform accepts a reply while
// the disk is full, so neither the sent part nor the reply's end can be
// recorded. Once the disk has room again the outbox must say so before a
// restart, or the restart sends the reply a second time (found by
// `go run ./bench soak`: a kill -9 some seconds after a full disk showed
// an answer twice).
func TestFullDiskDoesNotRepeatASentReply(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.jsonl")
	var full atomic.Bool
	open := func(name string, flag int, perm os.FileMode) (wal.File, error) {
		f, err := os.OpenFile(name, flag, perm)
		if err != nil {
			return nil, err
		}
		return fullDiskFile{File: f, full: &full}, nil
	}
	ob, _, err := outbox.Open(path, outbox.Options{Open: open})
	if err != nil {
		t.Fatal(err)
	}
	first, err := ob.Add(bus.Outbound{Channel: "tg", ChatID: "1", Content: "first", Kind: bus.KindMessage})
	if err != nil {
		t.Fatal(err)
	}

	full.Store(true)
	if err := ob.PartSent(first.ID, 0, channels.MessageRef{ChatID: "1", MessageID: "77"}); err == nil {
		t.Fatal("PartSent on a full disk: no error")
	}
	ob.Finished(first.ID, channels.OutcomeSent)
	full.Store(false)

	// Any later record, here the next reply, brings the file up to date.
	second, err := ob.Add(bus.Outbound{Channel: "tg", ChatID: "2", Content: "second", Kind: bus.KindMessage})
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Close(); err != nil {
		t.Fatal(err)
	}

	ob, pending, err := outbox.Open(path, outbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	var ids []string
	for _, m := range pending {
		ids = append(ids, m.ID)
	}
	if len(ids) != 1 || ids[0] != second.ID {
		t.Errorf("pending after restart = %v, want only the second reply %s (the first was delivered)", ids, second.ID)
	}
}

// TestFullDiskKeepsWhatWasSent: a part the platform accepted while the
// disk was full counts as sent in this run too, and is on file once the
// disk has room again.
func TestFullDiskKeepsWhatWasSent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.jsonl")
	var full atomic.Bool
	open := func(name string, flag int, perm os.FileMode) (wal.File, error) {
		f, err := os.OpenFile(name, flag, perm)
		if err != nil {
			return nil, err
		}
		return fullDiskFile{File: f, full: &full}, nil
	}
	ob, _, err := outbox.Open(path, outbox.Options{Open: open})
	if err != nil {
		t.Fatal(err)
	}
	long, err := ob.Add(bus.Outbound{Channel: "tg", ChatID: "1", Content: "two parts", Kind: bus.KindMessage})
	if err != nil {
		t.Fatal(err)
	}
	full.Store(true)
	_ = ob.PartSent(long.ID, 0, channels.MessageRef{ChatID: "1", MessageID: "77"})
	if got := ob.SentParts(long.ID); got[0].MessageID != "77" {
		t.Errorf("SentParts after a failed write = %v, want part 0 as message 77", got)
	}
	full.Store(false)
	if _, err := ob.Add(bus.Outbound{Channel: "tg", ChatID: "2", Content: "next", Kind: bus.KindMessage}); err != nil {
		t.Fatal(err)
	}
	if err := ob.Close(); err != nil {
		t.Fatal(err)
	}
	ob, _, err = outbox.Open(path, outbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	if got := ob.SentParts(long.ID); got[0].MessageID != "77" {
		t.Errorf("SentParts after a restart = %v, want part 0 as message 77 (else the restart sends it again)", got)
	}
}
