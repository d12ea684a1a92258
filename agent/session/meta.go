package session

import (
	"context"
	"fmt"
	"time"

	"github.com/nanobot-go/nanobot/providers"
)

// metaStore is what the writes both stores share need of a store: owning
// a session for one operation, its clock and cache, and persisting a new
// cursor and metadata.
type metaStore interface {
	own(ctx context.Context, op string, s *Session) (unlock func(), err error)
	clock() time.Time
	recent() *cache
	writeMeta(ctx context.Context, s *Session, cursor int, md map[string]any) error
}

// writeStamped owns s for op, timestamps copies of msgs and hands them to
// write; s counts as recently used afterwards.
func writeStamped(ctx context.Context, st metaStore, op string, s *Session, msgs []providers.Message,
	write func(msgs []providers.Message, now time.Time) error) error {
	return whileOwned(ctx, st, op, s, func(now time.Time) error {
		defer st.recent().touch(s)
		all, err := stamped(msgs, now)
		if err != nil {
			return fmt.Errorf("session: %s %q: %w", op, s.Key, err)
		}
		return write(all, now)
	})
}

// whileOwned runs fn with s owned for op, at the store's time.
func whileOwned(ctx context.Context, st metaStore, op string, s *Session, fn func(now time.Time) error) error {
	unlock, err := st.own(ctx, op, s)
	if err != nil {
		return err
	}
	defer unlock()
	return fn(st.clock())
}

// metaWrites implements the Store methods that only change a session's
// cursor and metadata, for both stores (each embeds it, set to itself).
type metaWrites struct{ st metaStore }

// SetCursor implements Store.
func (w metaWrites) SetCursor(ctx context.Context, s *Session, lastConsolidated int) error {
	st := w.st
	unlock, err := st.own(ctx, "set cursor of", s)
	if err != nil {
		return err
	}
	defer unlock()
	if lastConsolidated < 0 || lastConsolidated > len(s.Messages) {
		return fmt.Errorf("session: set cursor of %q to %d of %d messages: %w",
			s.Key, lastConsolidated, len(s.Messages), ErrInvalidCursor)
	}
	if lastConsolidated == s.LastConsolidated {
		return nil
	}
	return st.writeMeta(ctx, s, lastConsolidated, s.Metadata)
}

// SetMetadata implements Store. The value is stored as its JSON decoding
// (numbers become float64, structs maps), so it reads back the same after a
// reload.
func (w metaWrites) SetMetadata(ctx context.Context, s *Session, key string, value any) error {
	st := w.st
	unlock, err := st.own(ctx, "set metadata of", s)
	if err != nil {
		return err
	}
	defer unlock()
	md, err := withMetadata(s, key, value)
	if err != nil {
		return err
	}
	return st.writeMeta(ctx, s, s.LastConsolidated, md)
}

// checkRewriteCursor refuses a rewrite whose cursor is outside its
// messages.
func checkRewriteCursor(s *Session, lastConsolidated, n int) error {
	if lastConsolidated < 0 || lastConsolidated > n {
		return fmt.Errorf("session: rewrite %q with cursor %d of %d messages: %w",
			s.Key, lastConsolidated, n, ErrInvalidCursor)
	}
	return nil
}

// lockOwn locks s's key in locks once it checked that s came from store.
func lockOwn(ctx context.Context, store any, locks *keyLocks, op string, s *Session) (unlock func(), err error) {
	if s == nil || s.owner != store {
		key := ""
		if s != nil {
			key = s.Key
		}
		return nil, fmt.Errorf("session: %s %q: %w", op, key, ErrForeignSession)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return locks.lock(s.Key), nil
}
