package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nanobot-go/nanobot/providers"
)

// TestHistoryDuringWrites reads History and the other accessors while
// another goroutine appends to, moves the cursor of, sets metadata of and
// archives the same session; -race checks the rest.
func TestHistoryDuringWrites(t *testing.T) {
	ts := newTestStore(t, "", FileStoreOptions{NoSync: true})
	ctx := context.Background()
	s := ts.load(t, "k:1")
	ts.append(t, s, u("start"))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				h := s.History(0)
				if len(h) > 0 && h[0].Role != "user" {
					t.Errorf("history starts with %q", h[0].Role)
					return
				}
				if c := s.Consolidated(); c < 0 || s.Updated().IsZero() || s.Created().IsZero() {
					t.Errorf("cursor %d, created %v, updated %v", c, s.Created(), s.Updated())
					return
				}
				_, _, _ = s.Meta("n"), s.Title(), s.Tail(2)
			}
		})
	}
	for i := range 200 {
		if err := ts.Append(ctx, s, u(fmt.Sprint("q", i)), ac("", fmt.Sprint(i)), tr(fmt.Sprint(i)), a("r")); err != nil {
			t.Fatal(err)
		}
		switch {
		case i%50 == 49:
			if err := ts.Archive(ctx, s); err != nil {
				t.Fatal(err)
			}
		case i%10 == 9:
			if err := ts.SetCursor(ctx, s, s.Len()-4); err != nil {
				t.Fatal(err)
			}
		case i%5 == 4:
			if err := ts.SetMetadata(ctx, s, "n", i); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
}

// TestAllOperationsOnOneSession runs every store operation on one session
// from several goroutines at once: -race checks the locking, and afterwards
// memory and disk agree and the file is valid.
func TestAllOperationsOnOneSession(t *testing.T) {
	ts := newTestStore(t, "", FileStoreOptions{NoSync: true, CompactAfter: 3})
	ctx := context.Background()
	s := ts.load(t, "k:1")
	ops := []func(i int) error{
		func(i int) error { return ts.Append(ctx, s, u(fmt.Sprint("q", i)), a("r")) },
		func(i int) error {
			err := ts.SetCursor(ctx, s, i%3)
			if errors.Is(err, ErrInvalidCursor) { // fewer messages than i%3 right now
				return nil
			}
			return err
		},
		func(i int) error { return ts.SetMetadata(ctx, s, "n", i) },
		func(i int) error {
			if i%10 != 0 {
				return nil
			}
			return ts.Archive(ctx, s)
		},
		func(i int) error {
			if i%10 != 5 {
				return nil
			}
			return ts.Rewrite(ctx, s, []providers.Message{u("rewritten")}, 0)
		},
		func(int) error { _, err := ts.Load(ctx, "k:1"); return err },
		func(int) error { _, err := ts.List(ctx); return err },
	}
	var wg sync.WaitGroup
	for w, op := range ops {
		wg.Go(func() {
			for i := range 40 {
				if err := op(i); err != nil {
					t.Errorf("op %d, round %d: %v", w, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	checkFileValid(t, ts.file("k:1"))
	r := ts.reopen(t).load(t, "k:1")
	if diff := cmp.Diff(s.Messages, r.Messages, cmpMsgs); diff != "" {
		t.Errorf("disk differs from memory (-memory +disk):\n%s", diff)
	}
	if r.LastConsolidated != s.LastConsolidated {
		t.Errorf("cursor on disk %d, in memory %d", r.LastConsolidated, s.LastConsolidated)
	}
	if diff := cmp.Diff(s.Metadata, r.Metadata); diff != "" {
		t.Errorf("metadata (-memory +disk):\n%s", diff)
	}
}
