package browser

import (
	"context"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// navGrace is how long an action that may lead to another page (a click,
// Enter in a form, going back) waits for that navigation to begin before
// it takes the page as it is. A form's submission, for one, starts in a
// task the page runs after the key press has been answered, so the old
// document still reads "complete" when the action returns.
const navGrace = 300 * time.Millisecond

// navWatch follows the loading of a tab's main frame from DevTools' page
// events. Its methods are safe for concurrent use: the events arrive on
// chromedp's goroutine, the waits run on the action's.
type navWatch struct {
	mu      sync.Mutex
	main    cdp.FrameID
	started uint64        // main-frame loads begun so far
	loading bool          // a main-frame load is under way
	changed chan struct{} // closed and replaced on every change
}

// newNavWatch listens on the tab's target, which must exist.
func newNavWatch(ctx context.Context) (*navWatch, error) {
	w := &navWatch{changed: make(chan struct{})}
	if c := chromedp.FromContext(ctx); c != nil && c.Target != nil {
		// Chromium names a page's main frame after its target.
		w.main = cdp.FrameID(c.Target.TargetID)
	}
	if err := chromedp.Listen(ctx, w.event); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *navWatch) event(ev any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch e := ev.(type) {
	case *page.EventFrameNavigated:
		if e.Frame != nil && e.Frame.ParentID == "" {
			w.main = e.Frame.ID
		}
		return
	case *page.EventFrameStartedLoading:
		if e.FrameID != w.main {
			return
		}
		if !w.loading {
			w.started++
		}
		w.loading = true
	case *page.EventFrameStoppedLoading:
		if e.FrameID != w.main {
			return
		}
		w.loading = false
	default:
		return
	}
	close(w.changed)
	w.changed = make(chan struct{})
}

// mark returns the count to hand to after once the action is done.
func (w *navWatch) mark() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.started
}

// after waits, once an action is done, for a navigation it began to end:
// up to navGrace for one to begin, then until it stops loading or
// settleWait. A page that never leaves costs navGrace.
func (w *navWatch) after(ctx context.Context, mark uint64) {
	grace := time.NewTimer(navGrace)
	defer grace.Stop()
	deadline := time.NewTimer(settleWait)
	defer deadline.Stop()
	graceOver := false
	for {
		w.mu.Lock()
		began, loading, changed := w.started != mark, w.loading, w.changed
		w.mu.Unlock()
		if !loading && (began || graceOver) {
			return
		}
		select {
		case <-changed:
		case <-grace.C:
			graceOver = true
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}
