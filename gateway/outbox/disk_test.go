package outbox_test

import (
	"path/filepath"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/gateway/outbox"
	"github.com/nanobot-go/nanobot/gateway/relay"
	"github.com/nanobot-go/nanobot/internal/wal/waltest"
)

// TestFullDiskDoesNotRepeatASentReply: the platform accepts a reply while
// the disk is full, so neither the sent part nor the reply's end can be
// recorded. Once the disk has room again the outbox must say so before a
// restart, or the restart sends the reply a second time (found by
// `go run ./bench soak`: a kill -9 some seconds after a full disk showed
// an answer twice).
func TestFullDiskDoesNotRepeatASentReply(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.jsonl")
	var disk waltest.Disk
	ob, _, err := outbox.Open(path, outbox.Options{Open: disk.Open})
	if err != nil {
		t.Fatal(err)
	}
	first, err := ob.Add(bus.Outbound{Channel: "tg", ChatID: "1", Content: "first", Kind: bus.KindMessage})
	if err != nil {
		t.Fatal(err)
	}

	disk.SetFull(true)
	if err := ob.PartSent(first.ID, 0, channels.MessageRef{ChatID: "1", MessageID: "77"}); err == nil {
		t.Fatal("PartSent on a full disk: no error")
	}
	ob.Finished(first.ID, relay.OutcomeSent)
	disk.SetFull(false)

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
	var disk waltest.Disk
	ob, _, err := outbox.Open(path, outbox.Options{Open: disk.Open})
	if err != nil {
		t.Fatal(err)
	}
	long, err := ob.Add(bus.Outbound{Channel: "tg", ChatID: "1", Content: "two parts", Kind: bus.KindMessage})
	if err != nil {
		t.Fatal(err)
	}
	disk.SetFull(true)
	_ = ob.PartSent(long.ID, 0, channels.MessageRef{ChatID: "1", MessageID: "77"})
	if got := ob.SentParts(long.ID); got[0].MessageID != "77" {
		t.Errorf("SentParts after a failed write = %v, want part 0 as message 77", got)
	}
	disk.SetFull(false)
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
