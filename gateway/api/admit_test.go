package api

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestTurnSlotsWaitForAFreeSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTurnSlots(1, 3*time.Second)
		release, ok := s.acquire(t.Context())
		if !ok {
			t.Fatal("the first slot was refused")
		}
		got := make(chan bool, 1)
		go func() {
			r, ok := s.acquire(context.Background())
			if ok {
				defer r()
			}
			got <- ok
		}()
		synctest.Wait() // the second request is waiting for the slot
		time.Sleep(2 * time.Second)
		release()
		if !<-got {
			t.Error("a request waiting within queueTimeout was refused when a slot freed")
		}
	})
}

func TestTurnSlotsRefuseAfterTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newTurnSlots(1, 3*time.Second)
		release, _ := s.acquire(t.Context())
		defer release()
		start := time.Now()
		if _, ok := s.acquire(t.Context()); ok {
			t.Fatal("a second slot was given out with the cap at 1")
		}
		if waited := time.Since(start); waited != 3*time.Second {
			t.Errorf("refused after %v, want after the 3s wait", waited)
		}
		now := newTurnSlots(1, 0)
		r, _ := now.acquire(t.Context())
		defer r()
		start = time.Now()
		if _, ok := now.acquire(t.Context()); ok || time.Since(start) != 0 {
			t.Errorf("with no wait: ok=%v after %v, want refused at once", ok, time.Since(start))
		}
	})
}
