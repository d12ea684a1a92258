package session

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestHistoryDuringWrites reads History while other goroutines append to,
// move the cursor of, and archive the same session; -race checks the rest.
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
		}
	}
	close(stop)
	wg.Wait()
}

// TestUnheldSessionsCollected checks that sessions evicted from the LRU and
// held by nobody are freed, weak entries included.
func TestUnheldSessionsCollected(t *testing.T) {
	ts := newTestStore(t, "", FileStoreOptions{MaxCached: 10, NoSync: true})
	func() {
		for i := range 1000 {
			ts.load(t, fmt.Sprint("idle:", i))
		}
	}()
	live := func() int {
		ts.cache.mu.Lock()
		defer ts.cache.mu.Unlock()
		return len(ts.cache.live)
	}
	deadline := time.Now().Add(10 * time.Second)
	for live() > 10 {
		if time.Now().After(deadline) {
			t.Fatalf("%d weak entries after GC, want at most the 10 cached sessions", live())
		}
		runtime.GC()
		runtime.Gosched()
	}
	if got := ts.cache.len(); got != 10 {
		t.Errorf("%d sessions cached, want 10", got)
	}
	s := ts.load(t, "idle:3") // collected; read again from (no) file
	if s.Key != "idle:3" || len(s.Messages) != 0 {
		t.Errorf("reloaded collected session: %+v", s)
	}
}
