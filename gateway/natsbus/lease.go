package natsbus

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Leases live in the lease bucket, whose entries expire LeaseTTL after
// their last write: a holder renews (a compare-and-set on the revision it
// holds) every LeaseTTL/3, and considers the lease lost as soon as a renewal
// fails or none succeeded for 2/3 of LeaseTTL — before the entry can expire
// and another instance can create it. The revision is the fencing token:
// a holder that was replaced cannot renew.

// acquire creates the lease key; ok is false when another instance holds it.
func (b *Bus) acquire(ctx context.Context, key string) (rev uint64, ok bool, err error) {
	rev, err = b.leases.Create(ctx, key, []byte(b.opts.Instance))
	if errors.Is(err, jetstream.ErrKeyExists) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return rev, true, nil
}

func (b *Bus) renew(ctx context.Context, key string, rev uint64) (uint64, error) {
	return b.leases.Update(ctx, key, []byte(b.opts.Instance), rev)
}

func (b *Bus) release(key string, rev uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := b.leases.Delete(ctx, key, jetstream.LastRevision(rev)); err != nil {
		b.log.Debug("releasing lease failed (it expires by itself)", "lease", key, "err", err)
	}
}

func (b *Bus) renewEvery() time.Duration { return max(b.opts.LeaseTTL/3, 20*time.Millisecond) }

// staleAfter is how long a holder trusts a lease without a successful
// renewal.
func (b *Bus) staleAfter() time.Duration { return b.opts.LeaseTTL * 2 / 3 }

// Hold runs fn whenever this instance holds the lease called name: it waits
// as a hot standby until the lease is free, runs fn with a context that ends
// when the lease is lost (or ctx ends), releases the lease when fn returns,
// and then waits again. It returns when ctx ends. Use it for what must run
// on exactly one instance: the channels role, cron, heartbeat.
func (b *Bus) Hold(ctx context.Context, name string, fn func(ctx context.Context)) {
	key := "lease." + sanitize(name)
	log := b.log.With("lease", name)
	for ctx.Err() == nil {
		rev, ok, err := b.acquire(ctx, key)
		if err != nil && ctx.Err() == nil {
			log.Warn("lease: cannot reach NATS; retrying", "err", err)
		}
		if !ok {
			if err == nil {
				b.countWait(name)
			}
			sleep(ctx, jitter(b.renewEvery()))
			continue
		}
		log.Info("lease acquired; running", "revision", rev)
		b.setHeld(name, true)
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); fn(runCtx) }()
		renewed := time.Now()
		t := time.NewTicker(b.renewEvery())
	hold:
		for {
			select {
			case <-done:
				break hold
			case <-ctx.Done():
				break hold
			case <-t.C:
				rctx, cancel := context.WithTimeout(ctx, b.renewEvery())
				next, err := b.renew(rctx, key, rev)
				cancel()
				if err == nil {
					rev, renewed = next, time.Now()
					continue
				}
				if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyNotFound) || time.Since(renewed) > b.staleAfter() {
					log.Warn("lease lost; stopping", "err", err)
					break hold
				}
			}
		}
		t.Stop()
		stop()
		<-done
		b.setHeld(name, false)
		b.release(key, rev)
	}
}

func (b *Bus) setHeld(name string, held bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held == nil {
		b.held = map[string]bool{}
	}
	if held {
		b.held[name] = true
	} else {
		delete(b.held, name)
	}
}

// countWait counts an attempt at lease name refused because another
// instance holds it.
func (b *Bus) countWait(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.waits == nil {
		b.waits = map[string]int{}
	}
	b.waits[name]++
}

// StandbyAttempts returns how many times this instance tried to take
// lease name and found it held by another (a standby's heartbeat: it is
// alive and ready to take over).
func (b *Bus) StandbyAttempts(name string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waits[name]
}

// Holds reports whether this instance holds the lease called name now.
func (b *Bus) Holds(name string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held[name]
}

func jitter(d time.Duration) time.Duration {
	return d/2 + time.Duration(rand.Int64N(int64(d)+1))
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// ErrLockLost is the cause (context.Cause) of a held lock's context
// ending because its lease could not be renewed: another instance may hold
// the lock now.
var ErrLockLost = errors.New("natsbus: lock lost")

// Lock takes the cluster-wide lock called name, waiting until it is free
// or ctx ends. The lock is a lease, renewed while held, that expires
// LeaseTTL after its holder died.
//
// The holder must do its work under held: it ends, with ErrLockLost as
// its cause, as soon as the lease cannot be renewed (see the lease rules
// above), before another instance can take the lock; it also ends with
// ctx, and when release is called. A write done after held ended may
// overlap another holder's. release gives the lock back (it may be called
// more than once); until then a lost lease is not deleted, so the next
// holder waits for it to expire.
func (b *Bus) Lock(ctx context.Context, name string) (held context.Context, release func(), err error) {
	key := "lock." + sanitize(name)
	// The value names this acquisition, not just the instance: two holders
	// in one process must not mistake each other's renewal for their own.
	token := b.opts.Instance + " " + randomID()
	wait := 20 * time.Millisecond
	for {
		rev, err := b.leases.Create(ctx, key, []byte(token))
		switch {
		case err == nil:
			held, cancel := context.WithCancelCause(ctx)
			stop, done := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				rev := b.keepLock(held, cancel, stop, key, token, rev)
				b.release(key, rev)
			}()
			var once sync.Once
			return held, func() {
				once.Do(func() { close(stop) })
				<-done
				cancel(context.Canceled)
			}, nil
		case !errors.Is(err, jetstream.ErrKeyExists) && !IsTransient(err):
			return nil, nil, fmt.Errorf("natsbus: lock %s: %w", name, err)
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(jitter(wait)):
		}
		wait = min(wait*2, b.renewEvery())
	}
}

// keepLock renews lock key until stop is closed and returns the last
// revision held. When the lease is lost it cancels held with ErrLockLost
// and stops renewing.
func (b *Bus) keepLock(held context.Context, cancel context.CancelCauseFunc, stop <-chan struct{}, key, token string, rev uint64) uint64 {
	t := time.NewTicker(b.renewEvery())
	defer t.Stop()
	renewed := time.Now()
	for {
		select {
		case <-stop:
			return rev
		case <-t.C:
		}
		// Renewals go on after the caller's ctx ended: the holder may still
		// be finishing, and the lock is its until release.
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(held), b.renewEvery())
		next, err := b.leases.Update(rctx, key, []byte(token), rev)
		if errors.Is(err, jetstream.ErrKeyExists) {
			// A renewal whose reply was lost may have landed: the key then
			// still carries our token, at a newer revision.
			if e, gerr := b.leases.Get(rctx, key); gerr == nil && string(e.Value()) == token {
				next, err = e.Revision(), nil
			}
		}
		rcancel()
		if err == nil {
			rev, renewed = next, time.Now()
			continue
		}
		if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyNotFound) || time.Since(renewed) > b.staleAfter() {
			b.log.Warn("lock lost; stopping its holder", "lock", key, "err", err)
			cancel(ErrLockLost)
			<-stop
			return rev
		}
	}
}
