package session

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

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
