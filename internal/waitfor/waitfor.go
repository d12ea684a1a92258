// Package waitfor is how tests wait for something to happen: they poll a
// condition until it holds and fail the test when it does not within a
// deadline. A test that asserts something did NOT happen first waits for
// a positive event with these, never a fixed sleep.
//
// The functions are safe to call from any test goroutine that may call
// t.Fatalf (the test's own).
package waitfor

import (
	"testing"
	"time"
)

// Timeout is how long True waits: long enough for a loaded CI machine
// running the race detector, short enough that a hang fails fast.
const Timeout = 10 * time.Second

// poll is the interval between two checks of the condition.
const poll = 5 * time.Millisecond

// True polls cond until it holds, failing the test after Timeout with
// "timed out waiting for <what>".
func True(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Within(t, what, Timeout, cond)
}

// Within is True with its own timeout.
func Within(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(poll)
	}
}
