package devstore

import (
	"bytes"
	"context"
	"errors"
	"time"

	"go.mau.fi/whatsmeow/store"
)

// bufferRetention is how long WhatsApp's servers may send an event again,
// so how long its hash is kept.
const bufferRetention = 14 * 24 * time.Hour

// ErrDuplicateEvent is returned by PutBufferedEvent for a hash already
// buffered (sqlstore's primary key refuses it the same way).
var ErrDuplicateEvent = errors.New("whatsapp device store: event already buffered")

// GetBufferedEvent implements store.EventBuffer; nil when unknown, a nil
// Plaintext once it was cleared.
func (s *Store) GetBufferedEvent(_ context.Context, hash [32]byte) (out *store.BufferedEvent, err error) {
	s.read(func() {
		e, ok := s.st.Events[hash]
		if !ok {
			return
		}
		out = &store.BufferedEvent{ServerTime: time.Unix(e.ServerTime, 0), InsertTime: time.UnixMilli(e.InsertTime)}
		if !e.Cleared {
			out.Plaintext = bytes.Clone(e.Plaintext)
			if out.Plaintext == nil {
				out.Plaintext = []byte{}
			}
		}
	})
	return out, nil
}

// PutBufferedEvent implements store.EventBuffer.
func (s *Store) PutBufferedEvent(ctx context.Context, hash [32]byte, plaintext []byte, serverTime time.Time) error {
	dup := false
	err := s.mutate(ctx, true, func(t *txn) bool {
		if _, dup = s.st.Events[hash]; dup {
			return false
		}
		set(t, s.st.Events, hash, bufferedEvent{Plaintext: bytes.Clone(plaintext), ServerTime: serverTime.Unix(), InsertTime: time.Now().UnixMilli()})
		return true
	})
	if err == nil && dup {
		return ErrDuplicateEvent
	}
	return err
}

// ClearBufferedEventPlaintext implements store.EventBuffer: the event was
// handled; its hash stays to recognise a redelivery. Debounced: a crash
// before the write makes the event be handled once more, as with a crash
// just before this call.
func (s *Store) ClearBufferedEventPlaintext(ctx context.Context, hash [32]byte) error {
	return s.mutate(ctx, false, func(t *txn) bool {
		e, ok := s.st.Events[hash]
		if !ok || e.Cleared {
			return false
		}
		set(t, s.st.Events, hash, bufferedEvent{Cleared: true, ServerTime: e.ServerTime, InsertTime: e.InsertTime})
		return true
	})
}

// DeleteOldBufferedHashes implements store.EventBuffer: hashes older than
// the servers' 14-day retention go.
func (s *Store) DeleteOldBufferedHashes(ctx context.Context) error {
	cutoff := time.Now().Add(-bufferRetention).UnixMilli()
	return s.mutate(ctx, false, func(t *txn) bool {
		changed := false
		for h, e := range s.st.Events {
			if e.InsertTime < cutoff {
				del(t, s.st.Events, h)
				changed = true
			}
		}
		return changed
	})
}
