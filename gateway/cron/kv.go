package cron

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// KVKey is the entry that holds the jobs document in a KV store.
const KVKey = "jobs"

// kvTimeout bounds one key-value round trip.
const kvTimeout = 10 * time.Second

// kvRetries bounds how often a change is retried when another instance
// changed the jobs between our read and our write.
const kvRetries = 50

// NewKVStore keeps the jobs in a NATS JetStream key-value bucket (cluster
// mode: every worker's cron tool and the one instance running the scheduler
// share them). The document is the same JSON as jobs.json. Changes are
// compare-and-set on the entry's revision, retried on conflict. Until ctx
// ends, a watch signals Changed whenever anyone changes the jobs, so the
// scheduler sees a job another instance added at once.
func NewKVStore(ctx context.Context, kv jetstream.KeyValue, log *slog.Logger) (*Store, error) {
	s := &Store{changed: make(chan struct{}, 1)}
	return s, s.MoveToKV(ctx, kv, log)
}

// MoveToKV switches a store to kv, as NewKVStore would have made it, before
// the store is used. The jobs already in its file (a single-machine setup
// turned into a cluster) are copied to the bucket when it has none yet.
func (s *Store) MoveToKV(ctx context.Context, kv jetstream.KeyValue, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	to := kvBackend{kv: kv}
	if s.be != nil {
		old, err := s.be.read(ctx)
		if err != nil {
			return err
		}
		if len(old) > 0 {
			err := to.modify(ctx, func(cur []byte) ([]byte, error) {
				if len(cur) > 0 {
					return nil, errAlreadyThere
				}
				return old, nil
			})
			switch {
			case err == nil:
				log.Info("cron: jobs copied to the cluster", "from", s.be.where(), "to", to.where())
			case !errors.Is(err, errAlreadyThere):
				return err
			}
		}
	}
	w, err := kv.Watch(ctx, KVKey, jetstream.UpdatesOnly())
	if err != nil {
		return fmt.Errorf("cron: watch %s: %w", to.where(), err)
	}
	s.be = to
	go func() {
		defer w.Stop() //nolint:errcheck
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					log.Warn("cron: jobs watch ended; changes by other instances are seen at the next recheck")
					return
				}
				if e != nil {
					s.signal()
				}
			}
		}
	}()
	return nil
}

var errAlreadyThere = errors.New("the bucket already holds jobs")

type kvBackend struct{ kv jetstream.KeyValue }

func (b kvBackend) where() string { return "nats-kv:" + b.kv.Bucket() + "/" + KVKey }

func (b kvBackend) read(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, kvTimeout)
	defer cancel()
	e, err := b.kv.Get(ctx, KVKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cron: read %s: %w", b.where(), err)
	}
	return e.Value(), nil
}

func (b kvBackend) modify(ctx context.Context, fn func(old []byte) ([]byte, error)) error {
	for attempt := range kvRetries {
		tctx, cancel := context.WithTimeout(ctx, kvTimeout)
		err := b.try(tctx, fn)
		cancel()
		if !errors.Is(err, errConflict) {
			return err
		}
		// Step aside for a random moment so two writers do not collide
		// in lock step; give up at once when the caller does.
		t := time.NewTimer(time.Duration(rand.Int64N(int64(time.Millisecond) << min(attempt, 6))))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("cron: save %s: %w", b.where(), context.Cause(ctx))
		case <-t.C:
		}
	}
	return fmt.Errorf("cron: save %s: gave up after %d conflicting changes", b.where(), kvRetries)
}

var errConflict = errors.New("changed concurrently")

// try is one read-modify-write; errConflict when the entry changed (or was
// created) in between.
func (b kvBackend) try(ctx context.Context, fn func(old []byte) ([]byte, error)) error {
	var old []byte
	var rev uint64
	e, err := b.kv.Get(ctx, KVKey)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case err != nil:
		return fmt.Errorf("cron: read %s: %w", b.where(), err)
	default:
		old, rev = e.Value(), e.Revision()
	}
	data, err := fn(old)
	if err != nil {
		return err
	}
	if rev == 0 {
		_, err = b.kv.Create(ctx, KVKey, data)
	} else {
		_, err = b.kv.Update(ctx, KVKey, data, rev)
	}
	var apiErr *jetstream.APIError
	if errors.Is(err, jetstream.ErrKeyExists) || errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return errConflict
	}
	if err != nil {
		return fmt.Errorf("cron: save %s: %w", b.where(), err)
	}
	return nil
}
