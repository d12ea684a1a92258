package browser

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// titled serves pages whose title is their path.
func titled() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<title>page %s</title><p>at %s</p>", r.URL.Path, r.URL.Path)
	})
}

// TestSessionsHaveTheirOwnTabs: two conversations browse at once, each
// sees its own page; a third, over MaxTabs, replaces the least recently
// used tab.
func TestSessionsHaveTheirOwnTabs(t *testing.T) {
	base := serve(t, site, titled())
	b := newBrowser(t, siteOnly, func(o *Options) { o.MaxTabs = 2 })
	tool := b.Tool("ws")
	var wg sync.WaitGroup
	for _, s := range []string{"a", "b"} {
		wg.Go(func() {
			if _, err := tool.Execute(session(s), map[string]any{"action": "navigate", "url": base + "/" + s}); err != nil {
				t.Errorf("session %s: %v", s, err)
			}
		})
	}
	wg.Wait()
	for _, s := range []string{"a", "b"} {
		if snap := run(t, session(s), tool, map[string]any{"action": "snapshot"}).Content; !strings.Contains(snap, "Page: page /"+s) {
			t.Errorf("session %s sees:\n%s", s, snap)
		}
	}
	// Another agent's tool with the same session key has its own tab.
	if snap := run(t, session("a"), b.Tool("other"), map[string]any{"action": "snapshot"}).Content; strings.Contains(snap, "page /a") {
		t.Errorf("another agent's session a sees agent ws's tab:\n%s", snap)
	}
	if n := b.Tabs(); n != 2 {
		t.Errorf("%d tabs open, want MaxTabs 2", n)
	}
	// Session a was used least recently, so it was replaced: it starts
	// on a blank tab.
	if snap := run(t, session("a"), tool, map[string]any{"action": "snapshot"}).Content; strings.Contains(snap, "page /a") {
		t.Errorf("session a kept its tab beyond MaxTabs:\n%s", snap)
	}
}

// TestIdleTabsAndBrowserClose: an unused tab closes after the idle
// timeout, and Chromium stops once it has had no tab as long; the next
// call starts it again.
func TestIdleTabsAndBrowserClose(t *testing.T) {
	base := serve(t, site, titled())
	b := newBrowser(t, siteOnly, func(o *Options) { o.IdleTimeout = 300 * time.Millisecond })
	tool := b.Tool("ws")
	run(t, session("a"), tool, map[string]any{"action": "navigate", "url": base + "/one"})
	pid, ok := b.Running()
	if !ok {
		t.Fatal("Chromium is not running after a call")
	}
	waitfor.Within(t, "the idle tab to close", 30*time.Second, func() bool { return b.Tabs() == 0 })
	waitfor.Within(t, "Chromium to stop after idling", 30*time.Second, func() bool { _, ok := b.Running(); return !ok })
	waitfor.Within(t, "Chromium's process to exit", 30*time.Second, func() bool { return gone(pid) })

	run(t, session("a"), tool, map[string]any{"action": "navigate", "url": base + "/two"})
	if _, ok := b.Running(); !ok {
		t.Error("Chromium did not start again")
	}
}

// TestCloseStopsChromium: Close ends the process; later calls fail.
func TestCloseStopsChromium(t *testing.T) {
	base := serve(t, site, titled())
	b := newBrowser(t, siteOnly)
	tool := b.Tool("ws")
	run(t, session("a"), tool, map[string]any{"action": "navigate", "url": base + "/"})
	pid, _ := b.Running()
	b.Close()
	if !gone(pid) {
		t.Errorf("Chromium (pid %d) still runs after Close", pid)
	}
	if _, err := tool.Execute(session("a"), map[string]any{"action": "snapshot"}); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
	b.Close() // twice is fine
}

// gone reports whether process pid has exited (and been reaped).
func gone(pid int) bool {
	if runtime.GOOS != "linux" {
		return true
	}
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return os.IsNotExist(err)
}

// TestArgumentsCheckedBeforeChromium: bad arguments are answered without
// starting a browser.
func TestArgumentsCheckedBeforeChromium(t *testing.T) {
	b, err := New(Options{ExecPath: "/nonexistent/chromium", ProfileDir: t.TempDir(), OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	tool := b.Tool("ws")
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"action": "fly"}, "unknown browser action"},
		{map[string]any{"action": "navigate"}, "needs a url"},
		{map[string]any{"action": "click"}, "needs ref"},
		{map[string]any{"action": "click", "ref": "button"}, "like e12"},
		{map[string]any{"action": "type", "ref": "e1"}, "needs text"},
		{map[string]any{"action": "scroll"}, "needs a direction"},
	} {
		_, err := tool.Execute(session("a"), tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want %q", tc.args, err, tc.want)
		}
	}
	if _, ok := b.Running(); ok {
		t.Error("Chromium started for invalid arguments")
	}
	if res, err := tool.Execute(session("a"), map[string]any{"action": "close"}); err != nil || !strings.Contains(res.Content, "No browser tab") {
		t.Errorf("close without a tab: %v %v", res, err)
	}
}

// TestChromiumCrashRestarts: when Chromium dies, the next call starts a
// new one instead of failing forever.
func TestChromiumCrashRestarts(t *testing.T) {
	base := serve(t, site, titled())
	b := newBrowser(t, siteOnly)
	tool := b.Tool("ws")
	run(t, session("a"), tool, map[string]any{"action": "navigate", "url": base + "/before"})
	pid, _ := b.Running()
	p, err := os.FindProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	lost := b.inst.root.Done()
	b.mu.Unlock()
	select {
	case <-lost:
	case <-time.After(30 * time.Second):
		t.Fatal("chromedp did not notice Chromium's death")
	}
	res := run(t, session("a"), tool, map[string]any{"action": "navigate", "url": base + "/after"})
	if !strings.Contains(res.Content, "page /after") {
		t.Errorf("after the restart:\n%s", res.Content)
	}
	if now, _ := b.Running(); now == pid {
		t.Error("still the dead Chromium's pid")
	}
}
