package session

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/nanobot-go/nanobot/providers"
)

// KVStoreOptions configures a KVStore.
type KVStoreOptions struct {
	// Bucket is the key-value bucket (default "NANOBOT_SESSIONS").
	Bucket string
	// Replicas in a NATS cluster (default 1).
	Replicas int
	// ChunkBytes caps the encoded size of one chunk of messages (default
	// 256 KiB, under NATS' default 1 MiB message limit). A single message
	// larger than that is stored alone.
	ChunkBytes int
	// MaxCached is how many sessions stay in memory (default 256).
	MaxCached int
	Logger    *slog.Logger
	Now       func() time.Time
}

// KVStore keeps sessions in a NATS JetStream key-value bucket, for workers
// on several machines (the cluster mode). A session is a head entry
// "s.<key>" (times, cursor, metadata, generation, chunk count) and its
// messages in chunk entries "c.<key>.<id>" the head lists in order: an
// append writes
// only a new chunk and then the head, so a turn costs two small writes
// whatever the history's length, and no value nears the server's message
// size limit. Keys are base64url-encoded session keys.
//
// Every head write is a compare-and-set on the revision this store last
// saw, so two workers can never both extend one session: the loser gets
// ErrConflict and its *Session is refreshed from the bucket. Load checks
// the head's revision and re-reads a session another worker changed, so a
// session that moved between workers is never served stale from the
// cache. Archive keeps the old chunks in the bucket (listed in the head as
// archived) like the archived files of FileStore; Rewrite deletes them.
type KVStore struct {
	metaWrites
	kv         jetstream.KeyValue
	log        *slog.Logger
	now        func() time.Time
	chunkBytes int
	cache      *cache
	locks      keyLocks

	mu    sync.Mutex
	state map[string]kvState // key -> what the bucket held when we last read or wrote
}

type kvState struct {
	rev    uint64   // head revision, 0: no head yet
	chunks []string // chunk ids, in order
	count  int
	arch   []kvArchive
}

type kvHead struct {
	Key              string         `json:"key"`
	CreatedAt        string         `json:"created_at"`
	UpdatedAt        string         `json:"updated_at"`
	LastConsolidated int            `json:"last_consolidated"`
	Metadata         map[string]any `json:"metadata"`
	Chunks           []string       `json:"chunks"`
	Messages         int            `json:"messages"`
	Archived         []kvArchive    `json:"archived,omitempty"`
}

type kvArchive struct {
	Chunks []string `json:"chunks"`
	At     string   `json:"at"`
}

// ErrConflict is returned when another writer changed the session since it
// was loaded (another worker owns it now). The *Session is refreshed.
var ErrConflict = errors.New("session changed by another writer")

var _ Store = (*KVStore)(nil)

// NewKVStore creates (or opens) the bucket on js.
func NewKVStore(ctx context.Context, js jetstream.JetStream, opts KVStoreOptions) (*KVStore, error) {
	if opts.Bucket == "" {
		opts.Bucket = "NANOBOT_SESSIONS"
	}
	if opts.Replicas <= 0 {
		opts.Replicas = 1
	}
	if opts.ChunkBytes <= 0 {
		opts.ChunkBytes = 256 << 10
	}
	if opts.MaxCached <= 0 {
		opts.MaxCached = 256
	}
	kv, err := js.KeyValue(ctx, opts.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: opts.Bucket, History: 1, Storage: jetstream.FileStorage, Replicas: opts.Replicas,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, opts.Bucket) // another worker was faster
		}
	}
	if err != nil {
		return nil, fmt.Errorf("session: bucket %s: %w", opts.Bucket, err)
	}
	s := &KVStore{kv: kv, log: opts.Logger, now: opts.Now, chunkBytes: opts.ChunkBytes,
		cache: newCache(opts.MaxCached), state: map[string]kvState{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.metaWrites = metaWrites{s}
	return s, nil
}

func kvEnc(key string) string        { return base64.RawURLEncoding.EncodeToString([]byte(key)) }
func headKey(key string) string      { return "s." + kvEnc(key) }
func chunkKey(key, id string) string { return "c." + kvEnc(key) + "." + id }

func chunkID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Load implements Store.
func (k *KVStore) Load(ctx context.Context, key string) (*Session, error) {
	if key == "" {
		return nil, fmt.Errorf("session: load: %w", ErrInvalidKey)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	unlock := k.locks.lock(key)
	defer unlock()
	var e jetstream.KeyValueEntry
	err := retry(ctx, func(ctx context.Context) (err error) { e, err = k.kv.Get(ctx, headKey(key)); return err })
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("session: load %q: %w", key, err)
	}
	s := k.cache.get(key)
	k.mu.Lock()
	st := k.state[key]
	k.mu.Unlock()
	if s != nil && ((e == nil && st.rev == 0) || (e != nil && e.Revision() == st.rev)) {
		return s, nil
	}
	fresh := s == nil
	if fresh {
		s = &Session{Key: key, owner: k}
	}
	if err := k.read(ctx, s, e); err != nil {
		return nil, fmt.Errorf("session: load %q: %w", key, err)
	}
	if fresh {
		k.cache.add(s)
	}
	return s, nil
}

// read fills s (in place, so holders see the refresh) from head entry e
// (nil: no session yet). The caller holds the key's lock.
func (k *KVStore) read(ctx context.Context, s *Session, e jetstream.KeyValueEntry) error {
	if e == nil {
		now := k.now()
		s.mu.Lock()
		s.CreatedAt, s.UpdatedAt, s.LastConsolidated, s.Metadata, s.Messages = now, now, 0, map[string]any{}, nil
		s.mu.Unlock()
		k.setState(s.Key, kvState{})
		return nil
	}
	var h kvHead
	if err := json.Unmarshal(e.Value(), &h); err != nil {
		return fmt.Errorf("head: %w", err)
	}
	var msgs []providers.Message
	for n, id := range h.Chunks {
		var ce jetstream.KeyValueEntry
		err := retry(ctx, func(ctx context.Context) (err error) { ce, err = k.kv.Get(ctx, chunkKey(s.Key, id)); return err })
		if err != nil {
			return fmt.Errorf("chunk %d: %w", n, err)
		}
		var part []providers.Message
		if err := json.Unmarshal(ce.Value(), &part); err != nil {
			return fmt.Errorf("chunk %d: %w", n, err)
		}
		msgs = append(msgs, part...)
	}
	if h.Metadata == nil {
		h.Metadata = map[string]any{}
	}
	cursor := min(max(h.LastConsolidated, 0), len(msgs))
	s.mu.Lock()
	s.CreatedAt, s.UpdatedAt = parseTime(h.CreatedAt), parseTime(h.UpdatedAt)
	s.LastConsolidated, s.Metadata, s.Messages = cursor, h.Metadata, msgs
	s.mu.Unlock()
	k.setState(s.Key, kvState{rev: e.Revision(), chunks: h.Chunks, count: len(msgs), arch: h.Archived})
	return nil
}

func (k *KVStore) setState(key string, st kvState) {
	k.mu.Lock()
	k.state[key] = st
	k.mu.Unlock()
}

func (k *KVStore) getState(key string) kvState {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.state[key]
}

func (k *KVStore) own(ctx context.Context, op string, s *Session) (func(), error) {
	return lockOwn(ctx, k, &k.locks, op, s)
}

// writeChunks stores msgs in new chunks and returns their ids. Chunk ids
// are random, so a writer that lost a race never overwrites a chunk the
// head refers to; its chunks are orphans nobody reads.
func (k *KVStore) writeChunks(ctx context.Context, key string, msgs []providers.Message) ([]string, error) {
	var written []string
	for len(msgs) > 0 {
		size, end := 2, 0
		for end < len(msgs) {
			b, err := json.Marshal(msgs[end])
			if err != nil {
				return nil, err
			}
			if end > 0 && size+len(b)+1 > k.chunkBytes {
				break
			}
			size += len(b) + 1
			end++
		}
		data, err := json.Marshal(msgs[:end])
		if err != nil {
			return nil, err
		}
		id := chunkID()
		if err := retry(ctx, func(ctx context.Context) error { _, err := k.kv.Put(ctx, chunkKey(key, id), data); return err }); err != nil {
			return nil, err
		}
		written = append(written, id)
		msgs = msgs[end:]
	}
	return written, nil
}

// writeHead compare-and-sets the head; on a conflict s is refreshed from
// the bucket and ErrConflict returned.
func (k *KVStore) writeHead(ctx context.Context, s *Session, st kvState, h kvHead) (uint64, error) {
	data, err := json.Marshal(h)
	if err != nil {
		return 0, err
	}
	var rev uint64
	err = retry(ctx, func(ctx context.Context) (err error) {
		if st.rev == 0 {
			rev, err = k.kv.Create(ctx, headKey(s.Key), data)
		} else {
			rev, err = k.kv.Update(ctx, headKey(s.Key), data, st.rev)
		}
		return err
	})
	if err != nil && errors.Is(err, jetstream.ErrKeyExists) {
		// A retried write may have landed before its reply was lost.
		if e, gerr := k.kv.Get(ctx, headKey(s.Key)); gerr == nil && string(e.Value()) == string(data) {
			return e.Revision(), nil
		}
	}
	if err == nil {
		return rev, nil
	}
	if errors.Is(err, jetstream.ErrKeyExists) {
		if e, gerr := k.kv.Get(ctx, headKey(s.Key)); gerr == nil {
			if rerr := k.read(ctx, s, e); rerr != nil {
				k.log.Warn("session: refresh after conflict failed", "session", s.Key, "err", rerr)
			}
		}
		return 0, ErrConflict
	}
	return 0, err
}

func (k *KVStore) head(s *Session, st kvState, cursor int, md map[string]any, count int, now time.Time) kvHead {
	return kvHead{Key: s.Key, CreatedAt: formatTime(s.CreatedAt), UpdatedAt: formatTime(now),
		LastConsolidated: cursor, Metadata: md, Chunks: st.chunks, Messages: count, Archived: st.arch}
}

// Append implements Store.
func (k *KVStore) Append(ctx context.Context, s *Session, msgs ...providers.Message) error {
	return writeStamped(ctx, k, "append to", s, msgs, func(add []providers.Message, now time.Time) error {
		return k.appendStamped(ctx, s, add, now)
	})
}

func (k *KVStore) appendStamped(ctx context.Context, s *Session, add []providers.Message, now time.Time) error {
	if len(add) == 0 {
		return nil
	}
	st := k.getState(s.Key)
	ids, err := k.writeChunks(ctx, s.Key, add)
	if err != nil {
		return fmt.Errorf("session: append to %q: %w", s.Key, err)
	}
	next := st
	next.chunks = append(append([]string(nil), st.chunks...), ids...)
	next.count = len(s.Messages) + len(add)
	rev, err := k.writeHead(ctx, s, st, k.head(s, next, s.LastConsolidated, s.Metadata, next.count, now))
	if err != nil {
		return fmt.Errorf("session: append to %q: %w", s.Key, err)
	}
	next.rev = rev
	k.setState(s.Key, next)
	s.mu.Lock()
	s.Messages, s.UpdatedAt = append(s.Messages, add...), now
	s.mu.Unlock()
	return nil
}

// writeMeta implements metaStore: a new head with the cursor and metadata.
func (k *KVStore) writeMeta(ctx context.Context, s *Session, cursor int, md map[string]any) error {
	now := k.now()
	st := k.getState(s.Key)
	rev, err := k.writeHead(ctx, s, st, k.head(s, st, cursor, md, len(s.Messages), now))
	if err != nil {
		return fmt.Errorf("session: update metadata of %q: %w", s.Key, err)
	}
	st.rev = rev
	k.setState(s.Key, st)
	s.mu.Lock()
	s.LastConsolidated, s.Metadata, s.UpdatedAt = cursor, md, now
	s.mu.Unlock()
	return nil
}

// Rewrite implements Store: the new history goes into new chunks,
// then the head switches to it (the old chunks are deleted afterwards).
func (k *KVStore) Rewrite(ctx context.Context, s *Session, msgs []providers.Message, lastConsolidated int) error {
	if err := checkRewriteCursor(s, lastConsolidated, len(msgs)); err != nil {
		return err
	}
	return writeStamped(ctx, k, "rewrite", s, msgs, func(all []providers.Message, now time.Time) error {
		return k.rewriteStamped(ctx, s, all, lastConsolidated, now)
	})
}

func (k *KVStore) rewriteStamped(ctx context.Context, s *Session, all []providers.Message, lastConsolidated int, now time.Time) error {
	var err error
	st := k.getState(s.Key)
	next := st
	if next.chunks, err = k.writeChunks(ctx, s.Key, all); err != nil {
		return fmt.Errorf("session: rewrite %q: %w", s.Key, err)
	}
	next.count = len(all)
	rev, err := k.writeHead(ctx, s, st, k.head(s, next, lastConsolidated, s.Metadata, len(all), now))
	if err != nil {
		return fmt.Errorf("session: rewrite %q: %w", s.Key, err)
	}
	next.rev = rev
	k.setState(s.Key, next)
	for _, id := range st.chunks {
		_ = k.kv.Purge(ctx, chunkKey(s.Key, id))
	}
	s.mu.Lock()
	s.Messages, s.LastConsolidated, s.UpdatedAt = all, lastConsolidated, now
	s.mu.Unlock()
	return nil
}

// Archive implements Store: the current generation is kept (listed in the
// head as archived) and s starts empty in a new one.
func (k *KVStore) Archive(ctx context.Context, s *Session) error {
	return whileOwned(ctx, k, "archive", s, func(now time.Time) error {
		st := k.getState(s.Key)
		next := kvState{rev: st.rev, arch: st.arch}
		if len(st.chunks) > 0 {
			next.arch = append(append([]kvArchive(nil), st.arch...), kvArchive{Chunks: st.chunks, At: formatTime(now)})
		}
		h := kvHead{Key: s.Key, CreatedAt: formatTime(now), UpdatedAt: formatTime(now), Metadata: map[string]any{},
			Archived: next.arch}
		rev, err := k.writeHead(ctx, s, st, h)
		if err != nil {
			return fmt.Errorf("session: archive %q: %w", s.Key, err)
		}
		next.rev = rev
		k.setState(s.Key, next)
		s.mu.Lock()
		s.CreatedAt, s.UpdatedAt = now, now
		s.LastConsolidated, s.Metadata, s.Messages = 0, map[string]any{}, nil
		s.mu.Unlock()
		return nil
	})
}

// List implements Store.
func (k *KVStore) List(ctx context.Context) ([]Info, error) {
	l, err := k.kv.ListKeysFiltered(ctx, "s.*")
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return nil, nil
		}
		return nil, fmt.Errorf("session: list: %w", err)
	}
	defer func() { _ = l.Stop() }()
	var keys []string
	for key := range l.Keys() {
		keys = append(keys, key)
	}
	var out []Info
	for _, hk := range keys {
		e, err := k.kv.Get(ctx, hk)
		if err != nil {
			continue // deleted meanwhile
		}
		var h kvHead
		if err := json.Unmarshal(e.Value(), &h); err != nil || h.Key == "" {
			k.log.Warn("session: unreadable head entry", "entry", strings.TrimPrefix(hk, "s."))
			continue
		}
		out = append(out, Info{Key: h.Key, UpdatedAt: parseTime(h.UpdatedAt), Messages: h.Messages})
	}
	return out, nil
}

// retry runs a bucket operation until it succeeds, fails for good, ctx
// ends or 30 s passed: a NATS restart or leader election must not fail a
// turn's save.
func retry(ctx context.Context, op func(ctx context.Context) error) error {
	deadline := time.Now().Add(30 * time.Second)
	wait := 50 * time.Millisecond
	for {
		octx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := op(octx)
		cancel()
		transient := errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) ||
			errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, context.DeadlineExceeded) ||
			errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, jetstream.ErrJetStreamNotEnabled)
		if err == nil || !transient || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
		wait = min(wait*2, 2*time.Second)
	}
}

func (k *KVStore) clock() time.Time { return k.now() }
func (k *KVStore) recent() *cache   { return k.cache }
