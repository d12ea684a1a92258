package gateway

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"
)

// idleRelease is how long the agent must have been idle after a busy spell
// before the gateway hands freed memory back to the operating system. It
// is longer than the dispatcher's worker lifetime, so the chats' delivery
// workers are gone by then.
const idleRelease = 30 * time.Second

// startRelease is how long after the start the memory of starting up is
// returned to the operating system (once the agent is idle).
const startRelease = 3 * time.Second

// releaseAfterStart returns the start-up's memory to the operating system
// once, after the agent has been idle at startRelease after the start: the
// start allocates about twice what stays live (configs, templates, the
// workspace and journal read, the first poll) and touches most of the
// executable (package initialisers), and the process would keep both for
// the first half minute. With trimCode it also unmaps the executable's
// read-only pages (the ones still needed fault back in from the page
// cache). One collection, a few milliseconds.
func releaseAfterStart(ctx context.Context, idle func() bool, trimCode bool, log *slog.Logger) {
	afterStart(ctx, startRelease, idle, func() { releaseMemory(trimCode, "start", log) })
}

// afterStart calls release once idle holds at a check, the first after
// wait and then every wait/6.
func afterStart(ctx context.Context, wait time.Duration, idle func() bool, release func()) {
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if idle() {
			release()
			return
		}
		t.Reset(wait / 6)
	}
}

// releaseWhenIdle returns memory to the OS once after each busy spell: Go
// collects garbage only as it allocates and returns freed pages slowly, so
// without this a daemon that served a burst would keep its peak RSS for
// minutes while doing nothing. It costs one garbage collection per burst.
// With trimCode it also unmaps the executable's read-only pages
// (gateway.trimCodePages).
func releaseWhenIdle(ctx context.Context, idle func() bool, trimCode bool, log *slog.Logger) {
	whenIdle(ctx, idle, idleRelease, func() { releaseMemory(trimCode, "idle", log) })
}

// releaseMemory returns freed heap to the OS and, with trimCode, unmaps
// the executable's read-only pages.
func releaseMemory(trimCode bool, why string, log *slog.Logger) {
	start := time.Now()
	debug.FreeOSMemory()
	var code int64
	if trimCode {
		var err error
		if code, err = dropCodePages(); err != nil {
			log.Debug(why+": code pages not released", "err", err)
		}
	}
	log.Debug(why+": memory returned to the OS", "code_mapped_bytes", code, "took", time.Since(start).Round(time.Microsecond))
}

// whenIdle calls release once each time idle has held for after, following
// a spell in which it did not.
func whenIdle(ctx context.Context, idle func() bool, after time.Duration, release func()) {
	tick := time.NewTicker(after / 6)
	defer tick.Stop()
	busy := true // starting up is a busy spell of its own
	var quietSince time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !idle() {
			busy, quietSince = true, time.Time{}
			continue
		}
		if !busy {
			continue
		}
		if quietSince.IsZero() {
			quietSince = time.Now()
			continue
		}
		if time.Since(quietSince) >= after {
			release()
			busy = false
		}
	}
}
