package agent

import (
	"context"
	"time"
)

// Idle compaction (agents.defaults.idleCompactAfterMinutes, nanobot's
// key): a conversation nobody has written to for a while is folded into
// memory in the background, as /compact does, so the next message starts
// from a short prompt without waiting for the fold. The fold runs as the
// session's worker: a message arriving meanwhile waits behind it, as
// behind a turn, and no turn of the session runs at the same time.

// idleSessions records when each session's worker retired; the sweep
// removes what it compacts or finds nothing to fold in. Guarded by
// Loop.mu.
type idleSessions map[string]time.Time

// CompactWhenIdle folds, every check (0: a minute), the sessions idle for
// LoopConfig.IdleCompact or more (once per idle spell), until ctx ends.
// Without IdleCompact it returns at once.
func (l *Loop) CompactWhenIdle(ctx context.Context, check time.Duration) {
	after := l.cfg.IdleCompact
	if after <= 0 || l.cfg.Consolidator == nil {
		return
	}
	if check <= 0 {
		check = time.Minute
	}
	every(ctx, check, func() {
		for _, key := range l.idleFor(after) {
			l.compactIdle(ctx, key)
		}
	})
}

// every calls fn each interval until ctx ends: the agent's background
// schedules (idle compaction, dreams).
func every(ctx context.Context, interval time.Duration, fn func()) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			fn()
		}
	}
}

// idleFor takes the sessions idle for after or more out of the record.
func (l *Loop) idleFor(after time.Duration) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var keys []string
	for key, since := range l.idle {
		if time.Since(since) >= after {
			keys = append(keys, key)
			delete(l.idle, key)
		}
	}
	return keys
}

// compactIdle starts key's worker with a fold before anything queued; a
// session that has a worker again (a message came) is left alone.
func (l *Loop) compactIdle(ctx context.Context, key string) {
	l.mu.Lock()
	if l.workers[key] != nil {
		l.mu.Unlock()
		return
	}
	w, _ := l.workerFor(key) // none existed (above): its goroutine is started below
	w.foldOnly = true
	l.mu.Unlock()
	l.wg.Go(func() {
		l.foldIdle(ctx, key)
		l.work(ctx, key, w)
	})
}

// foldIdle compacts one session, charged to its conversation; a failure
// is logged (the next turn's consolidation still keeps it in budget).
func (l *Loop) foldIdle(ctx context.Context, key string) {
	sess, err := l.cfg.Store.Load(ctx, key)
	if err != nil {
		l.log.Warn("idle compaction: loading the session failed", "session", key, "err", err)
		return
	}
	channel, chat := sess.Origin()
	n, err := l.cfg.Consolidator.Compact(consolidationContext(ctx, channel, chat, "", key, false), sess, compactKeep)
	switch {
	case err != nil:
		l.log.Warn("idle compaction failed", "session", key, "folded", n, "err", err)
	case n > 0:
		l.log.Info("idle conversation compacted", "session", key, "folded", n)
	}
}
