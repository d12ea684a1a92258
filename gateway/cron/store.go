package cron

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// Schedule kinds.
const (
	KindAt    = "at"
	KindEvery = "every"
	KindCron  = "cron"
)

// Schedule says when a job runs. Times are Unix milliseconds, as in the
// Python nanobot's jobs.json.
type Schedule struct {
	Kind    string `json:"kind"`
	AtMs    int64  `json:"atMs,omitempty"`
	EveryMs int64  `json:"everyMs,omitempty"`
	Expr    string `json:"expr,omitempty"`
	TZ      string `json:"tz,omitempty"`
}

// Payload is what a firing job does: an agent turn with Message, whose reply
// is delivered to Channel/To.
type Payload struct {
	Kind    string `json:"kind"` // "agent_turn"
	Message string `json:"message"`
	Deliver bool   `json:"deliver"`
	Channel string `json:"channel,omitempty"`
	To      string `json:"to,omitempty"` // chat id
	// SessionKey is the conversation the job belongs to (defaults to
	// channel:to).
	SessionKey string `json:"sessionKey,omitempty"`
}

// State is a job's run bookkeeping.
type State struct {
	NextRunAtMs int64  `json:"nextRunAtMs,omitempty"`
	LastRunAtMs int64  `json:"lastRunAtMs,omitempty"`
	LastStatus  string `json:"lastStatus,omitempty"` // ok, error, missed
	LastError   string `json:"lastError,omitempty"`
}

// Job is one scheduled job.
type Job struct {
	ID             string   `json:"id"`
	Name           string   `json:"name"`
	Enabled        bool     `json:"enabled"`
	Schedule       Schedule `json:"schedule"`
	Payload        Payload  `json:"payload"`
	State          State    `json:"state"`
	CreatedAtMs    int64    `json:"createdAtMs"`
	UpdatedAtMs    int64    `json:"updatedAtMs"`
	DeleteAfterRun bool     `json:"deleteAfterRun,omitempty"`
}

// Session returns the session key the job's turns run in.
func (j Job) Session() string {
	if j.Payload.SessionKey != "" {
		return j.Payload.SessionKey
	}
	return bus.SessionKeyOf(j.Payload.Channel, j.Payload.To)
}

type file struct {
	Version int   `json:"version"`
	Jobs    []Job `json:"jobs"`
}

// Store holds the jobs: jobs.json on disk by default, or a NATS key-value
// entry in cluster mode (NewKVStore). Every change is a read-modify-write
// under the backend's exclusion (a file lock, or the entry's revision), so
// the gateway, the agent's tool and `nanobot cron` — in one process or on
// several machines — can change it at the same time without losing a job.
type Store struct {
	be backend
	mu sync.Mutex
	// changed is signalled after every change made through this Store (and,
	// with a KV store, by anyone).
	changed chan struct{}
}

// backend is where the jobs document lives.
type backend interface {
	// read returns the document, nil when there is none yet.
	read(ctx context.Context) ([]byte, error)
	// modify replaces the document with fn's result under exclusive
	// access; fn may run more than once (optimistic backends retry).
	modify(ctx context.Context, fn func(old []byte) ([]byte, error)) error
	// where names the store in messages.
	where() string
}

// NewStore returns the store at path (cron/jobs.json).
func NewStore(path string) *Store {
	return &Store{be: fileBackend{path: path}, changed: make(chan struct{}, 1)}
}

// Path is where the jobs are kept (a file path, or "nats-kv:<bucket>/<key>").
func (s *Store) Path() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.be.where()
}

// Changed is signalled (without blocking) after changes through this Store.
func (s *Store) Changed() <-chan struct{} { return s.changed }

// Jobs returns all jobs.
func (s *Store) Jobs(ctx context.Context) ([]Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := s.be.read(ctx)
	if err != nil {
		return nil, err
	}
	f, err := s.decode(b)
	return f.Jobs, err
}

// ErrNotFound is returned for an unknown job id.
var ErrNotFound = errors.New("no such job")

// Update applies fn to the jobs under the lock, saves the result and
// signals Changed.
func (s *Store) Update(ctx context.Context, fn func(jobs []Job) ([]Job, error)) error {
	return s.update(ctx, fn, true)
}

// UpdateQuiet is Update without signalling Changed: the scheduler's own
// bookkeeping must not wake the scheduler.
func (s *Store) UpdateQuiet(ctx context.Context, fn func(jobs []Job) ([]Job, error)) error {
	return s.update(ctx, fn, false)
}

func (s *Store) update(ctx context.Context, fn func(jobs []Job) ([]Job, error), notify bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.be.modify(ctx, func(old []byte) ([]byte, error) {
		f, err := s.decode(old)
		if err != nil {
			return nil, err
		}
		jobs, err := fn(slices.Clone(f.Jobs))
		if err != nil {
			return nil, err
		}
		b, err := json.MarshalIndent(file{Version: 1, Jobs: jobs}, "", "  ")
		if err != nil {
			return nil, err
		}
		return append(b, '\n'), nil
	})
	if err != nil {
		return err
	}
	if notify {
		s.signal()
	}
	return nil
}

func (s *Store) signal() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Add stores a new job.
func (s *Store) Add(ctx context.Context, j Job) error {
	return s.Update(ctx, func(jobs []Job) ([]Job, error) { return append(jobs, j), nil })
}

// Remove deletes a job; with session set, only a job of that session.
func (s *Store) Remove(ctx context.Context, id, session string) error {
	return s.Update(ctx, func(jobs []Job) ([]Job, error) {
		i := slices.IndexFunc(jobs, func(j Job) bool { return j.ID == id && (session == "" || j.Session() == session) })
		if i < 0 {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		return slices.Delete(jobs, i, i+1), nil
	})
}

func (s *Store) decode(b []byte) (file, error) {
	if len(b) == 0 {
		return file{Version: 1}, nil
	}
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return file{}, fmt.Errorf("cron: %s is not valid jobs JSON: %w", s.be.where(), err)
	}
	return f, nil
}

// fileBackend is jobs.json, changed under an exclusive flock on a lock file
// beside it and written atomically (internal/atomicfile). Local file access
// does not wait on ctx.
type fileBackend struct{ path string }

func (b fileBackend) where() string { return b.path }

func (b fileBackend) read(context.Context) ([]byte, error) {
	data, err := os.ReadFile(b.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

func (b fileBackend) modify(_ context.Context, fn func(old []byte) ([]byte, error)) error {
	return atomicfile.Update(b.path, 0o600, fn)
}

// ms converts a time to Unix milliseconds.
func ms(t time.Time) int64 { return t.UnixMilli() }

// fromMs converts Unix milliseconds to a time.
func fromMs(v int64) time.Time { return time.UnixMilli(v) }
