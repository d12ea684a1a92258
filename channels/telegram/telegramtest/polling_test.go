package telegramtest

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// TestPolling: Polling is true exactly while a getUpdates request is held
// open, and an update ends the hold (and is counted by Polls).
func TestPolling(t *testing.T) {
	s := New(t)
	if s.Polling() {
		t.Fatal("polling before any getUpdates")
	}
	done := make(chan int, 1)
	go func() {
		// Not call: its t.Fatal must stay on the test's goroutine.
		resp, err := http.PostForm(s.URL+"/bot"+Token+"/getUpdates", url.Values{"timeout": {"30"}})
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	waitfor.True(t, "the long poll held", s.Polling)
	if s.Polls() != 0 {
		t.Errorf("Polls() = %d while the only poll is held, want 0", s.Polls())
	}
	s.Send(Msg{From: User{ID: 7}, Chat: Chat{ID: 7, Type: "private"}, Text: "hi"})
	if code := <-done; code != 200 {
		t.Fatalf("getUpdates answered %d", code)
	}
	if s.Polling() || s.Polls() != 1 {
		t.Errorf("after the answer: Polling() = %v, Polls() = %d; want false, 1", s.Polling(), s.Polls())
	}
}
