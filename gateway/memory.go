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

// releaseWhenIdle returns memory to the OS once after each busy spell: Go
// collects garbage only as it allocates and returns freed pages slowly, so
// without this a daemon that served a burst would keep its peak RSS for
// minutes while doing nothing. It costs one garbage collection per burst.
// With trimCode it also unmaps the executable's read-only pages
// (gateway.trimCodePages).
func releaseWhenIdle(ctx context.Context, idle func() bool, trimCode bool, log *slog.Logger) {
	whenIdle(ctx, idle, idleRelease, func() {
		start := time.Now()
		debug.FreeOSMemory()
		var code int64
		if trimCode {
			var err error
			if code, err = dropCodePages(); err != nil {
				log.Debug("idle: code pages not released", "err", err)
			}
		}
		log.Debug("idle: memory returned to the OS", "code_mapped_bytes", code, "took", time.Since(start).Round(time.Microsecond))
	})
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
