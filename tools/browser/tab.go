package browser

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/chromedp/chromedp"
)

// tab is one session's page.
type tab struct {
	key    string
	ctx    context.Context // chromedp context of the target
	cancel context.CancelFunc
	nav    *navWatch
	// run serialises the actions of the session.
	run sync.Mutex
	// users and lastUsed are guarded by Browser.mu.
	users    int
	lastUsed time.Time

	mu sync.Mutex
	// page and sub are the last page (document) and the last other
	// request the policy refused, for the answer of the action that
	// caused them.
	page, sub string
}

func (t *tab) noteBlocked(why string, document bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if document {
		t.page = why
	} else {
		t.sub = why
	}
}

// takeBlocked returns and clears the last refusals.
func (t *tab) takeBlocked() (page, sub string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	page, sub = t.page, t.sub
	t.page, t.sub = "", ""
	return page, sub
}

// acquire returns the session's tab, starting Chromium and opening the tab
// when needed, marked in use; release it when done.
func (b *Browser) acquire(key string) (*tab, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	if b.inst != nil && b.inst.root.Err() != nil {
		// Chromium exited under us (a crash, the OOM killer): clean up and
		// start a new one; the sessions' pages are lost.
		b.log.Warn("browser: Chromium exited; starting it again", "pid", b.inst.pid)
		dead := b.inst
		var tabs []*tab
		for _, t := range b.tabs {
			tabs = append(tabs, t)
		}
		b.inst, b.tabs = nil, map[string]*tab{}
		dead.stop(tabs)
	}
	if b.inst == nil {
		inst, err := b.start()
		if err != nil {
			return nil, err
		}
		b.inst = inst
	}
	if t, ok := b.tabs[key]; ok {
		t.users++
		return t, nil
	}
	if len(b.tabs) >= b.opts.MaxTabs && !b.evictLocked() {
		return nil, fmt.Errorf("browser: all %d tabs are busy; try again in a moment", b.opts.MaxTabs)
	}
	t, err := b.openTab(b.inst, key)
	if err != nil {
		return nil, err
	}
	t.users = 1
	b.tabs[key] = t
	return t, nil
}

// release marks t unused since now.
func (b *Browser) release(t *tab) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t.users--
	t.lastUsed = time.Now()
}

// evictLocked closes the least recently used idle tab; false when every
// tab is in use.
func (b *Browser) evictLocked() bool {
	var lru *tab
	for _, t := range b.tabs {
		if t.users == 0 && (lru == nil || t.lastUsed.Before(lru.lastUsed)) {
			lru = t
		}
	}
	if lru == nil {
		return false
	}
	delete(b.tabs, lru.key)
	lru.cancel()
	b.log.Debug("browser: closed the least recently used tab", "session", lru.key)
	return true
}

// closeTab closes the session's tab, if it has one.
func (b *Browser) closeTab(key string) bool {
	b.mu.Lock()
	t, ok := b.tabs[key]
	if ok {
		delete(b.tabs, key)
	}
	b.mu.Unlock()
	if ok {
		t.cancel()
	}
	return ok
}

// openTab opens a target in inst and puts its requests under the policy
// before any page loads.
func (b *Browser) openTab(inst *instance, key string) (*tab, error) {
	ctx, cancel := chromedp.NewContext(inst.root)
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		return nil, fmt.Errorf("browser: open a tab: %w", err)
	}
	nav, err := newNavWatch(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("browser: follow the tab's pages: %w", err)
	}
	t := &tab{key: key, ctx: ctx, cancel: cancel, nav: nav}
	if err := b.intercept(inst, t); err != nil {
		cancel()
		return nil, err
	}
	return t, nil
}

// within runs f on t's target under the action timeout, ending early when
// the call's ctx does.
func (b *Browser) within(call context.Context, t *tab, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(t.ctx, b.opts.ActionTimeout)
	defer cancel()
	stop := context.AfterFunc(call, cancel)
	defer stop()
	err := f(ctx)
	if err != nil && call.Err() != nil {
		return call.Err()
	}
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		return fmt.Errorf("the page did not answer within %s", b.opts.ActionTimeout)
	}
	return err
}
