package outbox_test

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/gateway/outbox"
	"github.com/nanobot-go/nanobot/internal/wal"
)

// slowSyncFile is an os file whose Sync waits until released, standing in
// for a disk where one reply's fsync takes long.
type slowSyncFile struct {
	*os.File
	slow    *atomic.Bool
	entered chan<- struct{}
	release <-chan struct{}
}

func (f slowSyncFile) Sync() error {
	if f.slow.Load() {
		f.entered <- struct{}{}
		<-f.release
	}
	return f.File.Sync()
}

// TestPartSentIsNotHeldUpByAnotherReplysFsync: recording that the
// platform accepted a send must not wait for another reply's fsync. Each
// moment it waits is a moment in which a kill -9 makes the restart send
// that part again (a duplicate the user sees, on platforms without
// idempotency keys).
func TestPartSentIsNotHeldUpByAnotherReplysFsync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "outbox.jsonl")
	ob, _, err := outbox.Open(path, outbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := ob.Add(bus.Outbound{Channel: "tg", ChatID: "1", Content: "first", Kind: bus.KindMessage})
	if err != nil {
		t.Fatal(err)
	}
	if err := ob.Close(); err != nil {
		t.Fatal(err)
	}

	var slow atomic.Bool
	entered, release := make(chan struct{}, 4), make(chan struct{})
	open := func(name string, flag int, perm os.FileMode) (wal.File, error) {
		f, err := os.OpenFile(name, flag, perm)
		if err != nil {
			return nil, err
		}
		return slowSyncFile{File: f, slow: &slow, entered: entered, release: release}, nil
	}
	ob, pending, err := outbox.Open(path, outbox.Options{Open: open})
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	if len(pending) != 1 || pending[0].ID != first.ID {
		t.Fatalf("pending after reopen = %+v, want the first reply", pending)
	}

	slow.Store(true)
	added := make(chan error, 1)
	go func() {
		_, err := ob.Add(bus.Outbound{Channel: "tg", ChatID: "2", Content: "second", Kind: bus.KindMessage})
		added <- err
	}()
	<-entered // the second reply's fsync is under way and stuck

	recorded := make(chan error, 1)
	go func() {
		recorded <- ob.PartSent(first.ID, 0, channels.MessageRef{ChatID: "1", MessageID: "77"})
	}()
	select {
	case err := <-recorded:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("PartSent waited for another reply's fsync")
	}
	if got := ob.SentParts(first.ID); got[0].MessageID != "77" {
		t.Fatalf("sent parts = %v", got)
	}
	select {
	case err := <-added:
		t.Fatalf("Add returned (%v) before its fsync finished", err)
	default:
	}
	close(release)
	if err := <-added; err != nil {
		t.Fatal(err)
	}
}
