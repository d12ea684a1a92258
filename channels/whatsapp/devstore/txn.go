package devstore

import (
	"context"
	"sync/atomic"
)

// txn is an open decryption transaction: the undo steps of the mutations
// made with its context, newest last.
type txn struct {
	s    *Store
	undo []func()
	done atomic.Bool // a context kept past the transaction no longer defers writes
}

type txnKey struct{}

// txnOf is the transaction of this store that ctx carries, if any.
func (s *Store) txnOf(ctx context.Context) *txn {
	t, _ := ctx.Value(txnKey{}).(*txn)
	if t == nil || t.s != s || t.done.Load() {
		return nil
	}
	return t
}

// DoDecryptionTxn implements store.EventBuffer: fn runs with a context
// whose mutations are undone if fn fails and written once, durably, when
// it succeeds. One transaction runs at a time; a nested call joins the
// outer one.
func (s *Store) DoDecryptionTxn(ctx context.Context, fn func(context.Context) error) error {
	if s.txnOf(ctx) != nil {
		return fn(ctx)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	t := &txn{s: s}
	err := fn(context.WithValue(ctx, txnKey{}, t))
	t.done.Store(true)
	if err != nil {
		s.mu.Lock()
		for i := len(t.undo) - 1; i >= 0; i-- {
			t.undo[i]()
		}
		s.mu.Unlock()
	}
	// Changes of other goroutines that waited for the transaction are
	// written too, even after a rollback.
	if werr := s.writeLocked(); err == nil {
		err = werr
	}
	return err
}

// set stores m[k] = v, recording the undo step in t (if any); the caller
// holds s.mu and bumps the generation.
func set[K comparable, V any](t *txn, m map[K]V, k K, v V) {
	remember(t, m, k)
	m[k] = v
}

// del deletes m[k] like set and reports whether it was there.
func del[K comparable, V any](t *txn, m map[K]V, k K) bool {
	if _, ok := m[k]; !ok {
		return false
	}
	remember(t, m, k)
	delete(m, k)
	return true
}

// upsert applies change to m[k] (the zero value when absent) and stores
// the result if it is new or different; it reports whether it stored.
func upsert[V comparable](t *txn, m map[string]V, k string, change func(*V)) bool {
	old, ok := m[k]
	v := old
	change(&v)
	if ok && v == old {
		return false
	}
	set(t, m, k, v)
	return true
}

// remember records how to restore m[k] to what it is now.
func remember[K comparable, V any](t *txn, m map[K]V, k K) {
	if t == nil {
		return
	}
	old, existed := m[k]
	t.undo = append(t.undo, func() {
		if existed {
			m[k] = old
		} else {
			delete(m, k)
		}
	})
}

// mutate runs fn under the state lock with the context's transaction;
// when fn reports a change, the change is saved durably or debounced.
func (s *Store) mutate(ctx context.Context, durable bool, fn func(t *txn) (changed bool)) error {
	t := s.txnOf(ctx)
	s.mu.Lock()
	changed := fn(t)
	if changed {
		s.gen++
	}
	s.mu.Unlock()
	if !changed {
		return nil
	}
	return s.saved(ctx, durable)
}

// read runs fn under the state lock.
func (s *Store) read(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn()
}
