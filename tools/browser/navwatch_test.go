package browser

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
)

// TestNavWatchWaitsForALoadThatBeginsLate: a navigation that begins after
// the action returned (a form's submission) is waited for to its end; one
// in another frame is not; a page that never leaves costs the grace.
func TestNavWatchWaitsForALoadThatBeginsLate(t *testing.T) {
	w := &navWatch{main: "main", changed: make(chan struct{})}
	ctx := context.Background()

	mark := w.mark()
	done := make(chan time.Time, 1)
	go func() { w.after(ctx, mark); done <- time.Now() }()
	w.event(&page.EventFrameStartedLoading{FrameID: "child"})
	w.event(&page.EventFrameStoppedLoading{FrameID: "child"})
	w.event(&page.EventFrameStartedLoading{FrameID: "main"})
	time.Sleep(2 * navGrace) // past the grace: only the stop may end the wait now
	stopped := time.Now()
	w.event(&page.EventFrameStoppedLoading{FrameID: "main"})
	if at := <-done; at.Before(stopped) {
		t.Fatal("after returned before the load stopped")
	}

	// The frame is renamed by a navigation: the new name counts.
	w.event(&page.EventFrameNavigated{Frame: &cdp.Frame{ID: "next"}})
	mark = w.mark()
	began := time.Now()
	w.after(ctx, mark)
	if waited := time.Since(began); waited < navGrace {
		t.Errorf("with no navigation after returned in %s, before the grace", waited)
	}
	if w.main != "next" {
		t.Errorf("main frame %q", w.main)
	}
}
