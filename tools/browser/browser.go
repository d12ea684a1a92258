// Package browser is the `browser` agent tool: a headless Chromium driven
// through the DevTools protocol (chromedp) that the model steers with an
// action — navigate, snapshot, click, type, scroll, screenshot, pdf, back,
// close. A snapshot lists what a reader of the page sees, and gives each
// interactive element a short reference (e12) that click and type take.
//
// One Browser per gateway owns one Chromium, started on first use with a
// profile directory of its own, and one tab per conversation session. A tab
// unused for Options.IdleTimeout is closed; Chromium stops when it has no
// tab left and has been idle as long, and at Close.
//
// Every request Chromium makes goes through the same SSRF policy as
// web_fetch, twice: a tab pauses each request of its pages (redirects
// included) and refuses what the policy refuses, with a reason the model
// sees; and Chromium's only way out is an HTTP proxy on loopback that dials
// through the policy's own resolver and dialer (egress.go), so DNS
// rebinding and requests a tab does not see (workers, popups, cross-site
// frames, WebSockets) are held to the same rule. Page text is untrusted
// and wrapped as web_fetch wraps it.
//
// Concurrency: a Browser and its Tools are safe for concurrent use. Calls
// for one session run one at a time on its tab (the agent may run two tool
// calls of one turn at once; they are serialised in no given order); calls
// for different sessions run in parallel on their own tabs. New does no IO;
// Close stops Chromium and every goroutine the package started.
package browser

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"github.com/nanobot-go/nanobot/tools/web"
)

// Defaults of Options.
const (
	DefaultIdleTimeout      = 10 * time.Minute
	DefaultMaxTabs          = 4
	DefaultMaxSnapshotChars = 12000
	// DefaultActionTimeout bounds one action (a page load included).
	DefaultActionTimeout = 45 * time.Second
)

// ErrClosed is returned by calls after Close.
var ErrClosed = errors.New("browser: closed")

// Options configures a Browser.
type Options struct {
	// ExecPath is the Chromium binary (see Find). Required.
	ExecPath string
	// ProfileDir is Chromium's user data directory (cookies, cache,
	// local storage), created 0700 when missing. Required.
	ProfileDir string
	// OutDir is where screenshots and PDFs are saved (a folder the message
	// tool may attach from). Required.
	OutDir string
	// Allow lists private networks the browser may reach anyway
	// (tools.ssrfAllowlist).
	Allow []netip.Prefix
	// Visible shows a window instead of running headless.
	Visible bool
	// IdleTimeout closes a tab unused this long, and Chromium when it has
	// had no tab for this long (default 10 minutes).
	IdleTimeout time.Duration
	// MaxTabs caps open tabs; a new session's tab replaces the least
	// recently used idle one (default 4).
	MaxTabs int
	// MaxSnapshotChars caps one snapshot (default 12000).
	MaxSnapshotChars int
	// ActionTimeout bounds one action (default 45 s).
	ActionTimeout time.Duration
	// NoSandbox runs Chromium without its own sandbox. Chromium refuses to
	// start as root with it, so it is forced on when the gateway runs as
	// root (a container); see docs/tools.md for what that costs.
	NoSandbox bool
	Logger    *slog.Logger
}

// Browser owns one Chromium and its tabs.
type Browser struct {
	opts  Options
	guard *web.SSRFGuard
	log   *slog.Logger

	mu     sync.Mutex
	inst   *instance // the running Chromium; nil when stopped
	tabs   map[string]*tab
	closed bool
	// reapers are the idle watchers of the instances started so far.
	reapers sync.WaitGroup
}

// New checks opts and returns a Browser that starts Chromium on first
// use. It does no IO.
func New(opts Options) (*Browser, error) {
	switch {
	case opts.ExecPath == "":
		return nil, errors.New("browser: no Chromium executable")
	case opts.ProfileDir == "":
		return nil, errors.New("browser: no profile directory")
	case opts.OutDir == "":
		return nil, errors.New("browser: no folder for screenshots")
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.MaxTabs <= 0 {
		opts.MaxTabs = DefaultMaxTabs
	}
	if opts.MaxSnapshotChars <= 0 {
		opts.MaxSnapshotChars = DefaultMaxSnapshotChars
	}
	if opts.ActionTimeout <= 0 {
		opts.ActionTimeout = DefaultActionTimeout
	}
	if runningAsRoot() {
		opts.NoSandbox = true
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Browser{opts: opts, guard: web.NewSSRFGuard(opts.Allow), log: log.With("tool", "browser"), tabs: map[string]*tab{}}, nil
}

// instance is one running Chromium.
type instance struct {
	root        context.Context // the browser's first tab, kept blank
	cancelRoot  context.CancelFunc
	cancelAlloc context.CancelFunc
	egress      *egress
	pid         int
	// stopped is closed when the instance stops; the reaper watches it.
	stopped chan struct{}
	// work counts the tabs' interceptors, which end with their tab.
	work sync.WaitGroup
}

// start launches Chromium. Called with b.mu held.
func (b *Browser) start() (*instance, error) {
	if err := os.MkdirAll(b.opts.ProfileDir, 0o700); err != nil {
		return nil, fmt.Errorf("browser: profile directory: %w", err)
	}
	began := time.Now()
	eg, err := startEgress(b.guard, b.log)
	if err != nil {
		return nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(b.opts.ExecPath),
		chromedp.UserDataDir(b.opts.ProfileDir),
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("no-pings", true),
		// Everything through the guarded proxy, loopback too (Chromium
		// bypasses a proxy for loopback unless told not to).
		chromedp.ProxyServer("http://"+eg.addr()),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		// WebRTC would otherwise send UDP past the proxy.
		chromedp.Flag("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"),
		chromedp.Flag("webrtc-ip-handling-policy", "disable_non_proxied_udp"),
	)
	if b.opts.Visible {
		opts = append(opts, chromedp.Flag("headless", false), chromedp.Flag("hide-scrollbars", false))
	}
	if runtime.GOOS == "linux" {
		opts = append(opts, chromedp.Flag("disable-gpu", true))
	}
	if b.opts.NoSandbox {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	root, cancelRoot := chromedp.NewContext(actx, chromedp.WithLogf(b.debugf), chromedp.WithErrorf(b.debugf))
	// The first run binds Chromium's life to root, not to a call.
	if err := chromedp.Do(root); err != nil {
		cancelRoot()
		cancelAlloc()
		eg.Close()
		return nil, fmt.Errorf("browser: start %s: %w", b.opts.ExecPath, err)
	}
	inst := &instance{root: root, cancelRoot: cancelRoot, cancelAlloc: cancelAlloc, egress: eg, stopped: make(chan struct{})}
	if c := chromedp.FromContext(root); c != nil && c.Browser != nil && c.Browser.Process() != nil {
		inst.pid = c.Browser.Process().Pid
	}
	// A page cannot drop files on this machine.
	if _, err := chromedp.CallBrowser(root, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorDeny}); err != nil {
		b.log.Warn("browser: cannot refuse downloads", "err", err)
	}
	b.log.Info("browser started", "pid", inst.pid, "took", time.Since(began).Round(time.Millisecond), "sandbox", !b.opts.NoSandbox)
	b.reapers.Go(func() { b.reap(inst) })
	return inst, nil
}

func (b *Browser) debugf(format string, args ...any) {
	b.log.Debug("browser: chromedp: " + fmt.Sprintf(format, args...))
}

// stop closes Chromium gracefully (a profile written out whole), then
// for sure, and waits for the instance's goroutines.
func (inst *instance) stop(tabs []*tab) {
	for _, t := range tabs {
		t.cancel()
	}
	if inst.root.Err() == nil { // alive: let it write its profile out
		ctx, cancel := context.WithTimeout(inst.root, 5*time.Second)
		_ = chromedp.Cancel(ctx)
		cancel()
	}
	inst.cancelRoot()
	inst.cancelAlloc()
	inst.work.Wait()
	inst.egress.Close()
	close(inst.stopped)
}

// reap closes idle tabs, and Chromium once it has had no tab for the idle
// timeout. It ends when the instance stops.
func (b *Browser) reap(inst *instance) {
	every := min(max(b.opts.IdleTimeout/4, 10*time.Millisecond), 30*time.Second)
	tick := time.NewTicker(every)
	defer tick.Stop()
	empty := time.Now()
	for {
		select {
		case <-inst.stopped:
			return
		case now := <-tick.C:
			if b.reapOnce(inst, now, &empty) {
				return
			}
		}
	}
}

// reapOnce closes what has been idle at now; true when it stopped inst.
func (b *Browser) reapOnce(inst *instance, now time.Time, empty *time.Time) bool {
	b.mu.Lock()
	if b.inst != inst {
		b.mu.Unlock()
		return true
	}
	var idle []*tab
	for key, t := range b.tabs {
		if t.users == 0 && now.Sub(t.lastUsed) >= b.opts.IdleTimeout {
			idle = append(idle, t)
			delete(b.tabs, key)
		}
	}
	if len(b.tabs) > 0 {
		*empty = now
		b.mu.Unlock()
		closeTabs(idle)
		return false
	}
	if len(idle) > 0 {
		*empty = now
	}
	if now.Sub(*empty) < b.opts.IdleTimeout {
		b.mu.Unlock()
		closeTabs(idle)
		return false
	}
	b.inst = nil
	b.mu.Unlock()
	b.log.Info("browser stopped after idling", "idle", b.opts.IdleTimeout)
	inst.stop(idle)
	return true
}

func closeTabs(tabs []*tab) {
	for _, t := range tabs {
		t.cancel()
	}
}

// Running reports whether Chromium is running, and its process id.
func (b *Browser) Running() (pid int, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inst == nil {
		return 0, false
	}
	return b.inst.pid, true
}

// Tabs is the number of open tabs (sessions).
func (b *Browser) Tabs() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.tabs)
}

// Close stops Chromium and waits for everything the Browser started.
// Calls after Close fail with ErrClosed. It is safe to call twice.
func (b *Browser) Close() {
	b.mu.Lock()
	b.closed = true
	inst := b.inst
	b.inst = nil
	var tabs []*tab
	for _, t := range b.tabs {
		tabs = append(tabs, t)
	}
	b.tabs = map[string]*tab{}
	b.mu.Unlock()
	if inst != nil {
		inst.stop(tabs)
	}
	b.reapers.Wait()
}
