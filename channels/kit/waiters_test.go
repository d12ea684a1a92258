package kit

import (
	"sync"
	"testing"
)

func TestWaiters(t *testing.T) {
	var w Waiters[string, int]
	if w.Deliver("a", 1) {
		t.Fatal("Deliver with nobody waiting reported true")
	}
	ch, forget := mustWait(t, &w, "a")
	if _, _, ok := w.Wait("a"); ok {
		t.Error("second Wait on a waiting id: ok = true, want false")
	}
	if !w.Deliver("a", 7) {
		t.Fatal("Deliver to a waiting call reported false")
	}
	if got := <-ch; got != 7 {
		t.Errorf("answer = %d, want 7", got)
	}
	// The call no longer waits: a repeated answer is dropped, not blocked on.
	if w.Deliver("a", 8) {
		t.Error("Deliver of a repeated answer reported true")
	}

	// A new call on the same id is not unregistered by the old call's forget.
	ch2, forget2 := mustWait(t, &w, "a")
	forget()
	if !w.Deliver("a", 9) || <-ch2 != 9 {
		t.Error("the old call's forget unregistered the new call")
	}
	forget2()
	if w.Deliver("a", 10) {
		t.Error("Deliver after forget reported true")
	}
}

// mustWait registers a call for id, to be forgotten at the end of the test
// at the latest.
func mustWait(t *testing.T, w *Waiters[string, int], id string) (<-chan int, func()) {
	t.Helper()
	ch, forget, ok := w.Wait(id)
	if !ok {
		t.Fatalf("Wait(%q) on a free id: ok = false", id)
	}
	t.Cleanup(forget)
	return ch, forget
}

func TestWaitersConcurrent(t *testing.T) {
	var w Waiters[int, int]
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ch, forget, ok := w.Wait(i)
			if !ok {
				t.Errorf("Wait(%d): ok = false", i)
				return
			}
			defer forget()
			go w.Deliver(i, i*2)
			if got := <-ch; got != i*2 {
				t.Errorf("answer for %d = %d, want %d", i, got, i*2)
			}
		}()
	}
	wg.Wait()
}
