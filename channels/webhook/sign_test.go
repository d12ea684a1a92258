package webhook

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestReplayMemoryIsBounded: the cache holds at most max entries; when all
// are still valid a new one is refused (never an old one forgotten early),
// and expired ones make room.
func TestReplayMemoryIsBounded(t *testing.T) {
	r := newReplayCache(3, 10*time.Minute)
	now := time.Unix(1_700_000_000, 0)
	for i := range 3 {
		if ok, err := r.add(fmt.Sprint(i), now.Add(time.Duration(i)*time.Second)); !ok || err != nil {
			t.Fatalf("add %d: %v %v", i, ok, err)
		}
	}
	if _, err := r.add("3", now.Add(5*time.Second)); !errors.Is(err, errReplayFull) {
		t.Fatalf("4th add into a full cache: %v, want errReplayFull", err)
	}
	if ok, _ := r.add("0", now.Add(time.Minute)); ok {
		t.Fatal("a remembered key was accepted again")
	}
	later := now.Add(10*time.Minute + 500*time.Millisecond) // key 0 expired, 1 and 2 not yet
	if ok, err := r.add("3", later); !ok || err != nil {
		t.Fatalf("add after expiry: %v %v", ok, err)
	}
	if ok, _ := r.add("1", later); ok {
		t.Error("key 1, still in its window, was accepted again")
	}
	if _, err := r.add("4", later); !errors.Is(err, errReplayFull) {
		t.Errorf("add into a cache full again: %v, want errReplayFull", err)
	}
	if n := r.len(); n != 3 {
		t.Errorf("cache holds %d keys, want 3", n)
	}
}
