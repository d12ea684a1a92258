package relay

import (
	"sync"
	"time"
)

// Limits on "/pairing approve" from chat: after attemptsFree wrong codes a
// sender waits attemptsBase, doubling with every further wrong code up to
// attemptsMax. A pairing code has 31^8 values and at most three are pending
// per channel, so guessing is hopeless anyway; the limit keeps a leaked
// admin identity from trying, and keeps the store's file lock quiet.
const (
	attemptsFree = 5
	attemptsBase = 30 * time.Second
	attemptsMax  = time.Hour
	// attemptsCap bounds the memory the limiter holds (one entry per
	// sender with recent wrong codes).
	attemptsCap = 4096
)

// attemptLimiter counts wrong codes per key (channel and sender) in memory;
// counters are lost on restart, which is fine for a back-off. Safe for
// concurrent use.
type attemptLimiter struct {
	now func() time.Time

	mu sync.Mutex
	m  map[string]*attempts
}

type attempts struct {
	failures int
	until    time.Time // refused before this
	last     time.Time
}

func newAttemptLimiter(now func() time.Time) *attemptLimiter {
	if now == nil {
		now = time.Now
	}
	return &attemptLimiter{now: now, m: map[string]*attempts{}}
}

// wait returns how long key must wait before its next attempt is checked
// (0: check it now).
func (l *attemptLimiter) wait(key string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.m[key]
	if a == nil {
		return 0
	}
	return max(a.until.Sub(l.now()), 0)
}

// fail records a wrong code and returns the wait it starts (0 while the
// sender has free attempts left).
func (l *attemptLimiter) fail(key string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	a := l.m[key]
	if a == nil {
		if len(l.m) >= attemptsCap {
			l.evict(now)
		}
		a = &attempts{}
		l.m[key] = a
	}
	a.failures++
	a.last = now
	if a.failures < attemptsFree {
		return 0
	}
	d := attemptsMax
	if shift := a.failures - attemptsFree; shift < 20 {
		d = min(attemptsBase<<shift, attemptsMax)
	}
	a.until = now.Add(d)
	return d
}

// succeed forgets key's wrong codes.
func (l *attemptLimiter) succeed(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, key)
}

// evict makes room: entries idle for attemptsMax go first (their back-off
// is over and would restart small anyway); if none, the least recently
// active one. Caller holds mu.
func (l *attemptLimiter) evict(now time.Time) {
	var oldest string
	var oldestAt time.Time
	for k, a := range l.m {
		if now.Sub(a.last) >= attemptsMax && !now.Before(a.until) {
			delete(l.m, k)
			continue
		}
		if oldest == "" || a.last.Before(oldestAt) {
			oldest, oldestAt = k, a.last
		}
	}
	if len(l.m) >= attemptsCap {
		delete(l.m, oldest)
	}
}

func (l *attemptLimiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}
