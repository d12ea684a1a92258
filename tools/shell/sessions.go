package shell

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"sort"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/internal/option"
	"github.com/nanobot-go/nanobot/internal/redact"
)

// Defaults for SessionOptions.
const (
	DefaultMaxSessions         = 8
	DefaultSessionIdleTimeout  = 30 * time.Minute
	DefaultSessionMaxLifetime  = 4 * time.Hour
	DefaultSessionBufferChars  = 50_000
	DefaultSessionReapInterval = 30 * time.Second
)

// endedMemory is how many ended sessions' ids are remembered, so that a
// poll of one says why it ended instead of "not found".
const endedMemory = 32

// Errors callers branch on; the tools wrap them in advice for the model.
var (
	// ErrSessionNotFound: no session with that id belongs to the caller's
	// conversation (another conversation's sessions are not found either).
	ErrSessionNotFound = errors.New("exec session not found")
	// ErrTooManySessions: the gateway runs MaxSessions already.
	ErrTooManySessions = errors.New("too many exec sessions")
	// ErrSessionsClosed: the gateway is stopping.
	ErrSessionsClosed = errors.New("exec sessions are shut down")
	// ErrSessionsUnsupported: this platform has no pseudo-terminals.
	ErrSessionsUnsupported = errors.New("exec sessions are not supported on this platform")
)

// SessionOptions configures Sessions. The zero value of every field means
// its default.
type SessionOptions struct {
	// MaxSessions caps the sessions alive at once, across conversations
	// (default 8).
	MaxSessions int
	// IdleTimeout kills a session no tool call has used (write_stdin, a
	// poll) for this long (default 30 minutes). Output does not count.
	IdleTimeout time.Duration
	// MaxLifetime kills a session this long after it started, however
	// busy (default 4 hours); exec's timeout argument may shorten it.
	MaxLifetime time.Duration
	// BufferChars is how much unread output a session keeps between polls:
	// the first and the most recent half (default 50,000 characters).
	BufferChars int
	// ReapInterval is how often Run looks for idle and expired sessions
	// (default 30s).
	ReapInterval time.Duration
	// Redact removes secrets from each poll's output before it is cut to
	// size (the tool registry redacts the result again).
	Redact *redact.Redactor
	// Now is the clock for idleness and lifetimes (default time.Now);
	// tests move it.
	Now func() time.Time
	// Logger receives a line per session started and ended (default
	// slog.Default()).
	Logger *slog.Logger
}

// Sessions holds the gateway's exec sessions: commands started by exec with
// yield_time_ms, kept running in a pseudo-terminal across tool calls, and
// reached with write_stdin and list_exec_sessions. A session belongs to the
// conversation that started it (its session key); no other conversation
// can see or use it.
//
// Lifecycle: NewSessions starts nothing. Run reaps idle and expired
// sessions until its context ends or Close is called; Close refuses new
// sessions, kills every one (its whole process group) and waits for them.
// All methods are safe for concurrent use.
type Sessions struct {
	opts SessionOptions
	log  *slog.Logger

	mu         sync.Mutex
	byID       map[string]*session     // sessions the model can reach
	live       map[*session]bool       // sessions whose processes have not ended
	ended      map[string]endedSession // recently ended, by id
	endedOrder []string
	closed     bool
	closing    chan struct{}
}

// NewSessions returns an empty set of sessions.
func NewSessions(opts SessionOptions) *Sessions {
	option.Positive(&opts.MaxSessions, DefaultMaxSessions)
	option.Positive(&opts.IdleTimeout, DefaultSessionIdleTimeout)
	option.Positive(&opts.MaxLifetime, DefaultSessionMaxLifetime)
	option.Positive(&opts.BufferChars, DefaultSessionBufferChars)
	option.Positive(&opts.ReapInterval, DefaultSessionReapInterval)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Sessions{
		opts: opts, log: log.With("component", "exec_sessions"),
		byID: map[string]*session{}, live: map[*session]bool{}, ended: map[string]endedSession{},
		closing: make(chan struct{}),
	}
}

// Supported reports whether sessions can run on this platform.
func (m *Sessions) Supported() bool { return ptySupported }

// Options returns the options in effect, defaults filled in.
func (m *Sessions) Options() SessionOptions { return m.opts }

// Run reaps idle and expired sessions every ReapInterval until ctx ends or
// Close is called. It does not kill the remaining sessions: Close does.
func (m *Sessions) Run(ctx context.Context) {
	t := time.NewTicker(m.opts.ReapInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.closing:
			return
		case <-t.C:
			m.reap()
		}
	}
}

// Close refuses new sessions, kills every session's process group and
// waits until their processes are gone and their output goroutines ended,
// or ctx ends (then it returns an error saying how many remain).
func (m *Sessions) Close(ctx context.Context) error {
	m.mu.Lock()
	if !m.closed {
		m.closed = true
		close(m.closing)
	}
	var all []*session
	for s := range m.live {
		all = append(all, s)
	}
	m.byID = map[string]*session{}
	m.mu.Unlock()
	for _, s := range all {
		s.kill("the gateway stopped")
	}
	for i, s := range all {
		select {
		case <-s.done:
		case <-ctx.Done():
			return fmt.Errorf("exec sessions: %d of %d still ending: %w", len(all)-i, len(all), ctx.Err())
		}
	}
	return nil
}

// endedSession is why a session the model did not see end was ended. The
// owner is kept with it: another conversation guessing the id learns
// nothing.
type endedSession struct{ owner, why string }

// sessionStart is what exec hands over to start a session.
type sessionStart struct {
	owner, command, dir string
	lifetime            time.Duration // 0 = MaxLifetime
	// build prepares the command under ctx (sandbox.Command); ctx ends
	// when the session is killed.
	build func(ctx context.Context) (*exec.Cmd, error)
}

// start runs a new session.
func (m *Sessions) start(req sessionStart) (*session, error) {
	if !ptySupported {
		return nil, ErrSessionsUnsupported
	}
	m.reap()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrSessionsClosed
	}
	if len(m.byID) >= m.opts.MaxSessions {
		return nil, fmt.Errorf("%w: at most %d may exist at once on this gateway", ErrTooManySessions, m.opts.MaxSessions)
	}
	lifetime := m.opts.MaxLifetime
	if req.lifetime > 0 {
		lifetime = min(lifetime, req.lifetime)
	}
	now := m.opts.Now()
	s := &session{id: newSessionID(), owner: req.owner, command: req.command, dir: req.dir,
		started: now, deadline: now.Add(lifetime), lastUse: now}
	ctx, cancel := context.WithCancel(context.Background())
	cmd, err := req.build(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	if err := newSession(cmd, cancel, s, m.opts.BufferChars, m.ended1); err != nil {
		return nil, fmt.Errorf("could not start the command: %w", err)
	}
	m.byID[s.id] = s
	m.live[s] = true
	m.log.Debug("exec session started", "session_id", s.id, "pid", cmd.Process.Pid)
	return s, nil
}

// ended1 is called by a session's wait goroutine once it is over.
func (m *Sessions) ended1(s *session) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.live, s)
	m.log.Debug("exec session ended", "session_id", s.id, "exit", s.exit)
}

// get returns the caller's session id.
func (m *Sessions) get(id, owner string) (*session, error) {
	m.reap()
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.byID[id]
	if ok && s.owner == owner {
		return s, nil
	}
	if e, ok := m.ended[id]; ok && e.owner == owner {
		return nil, fmt.Errorf("%w: %s ended: %s", ErrSessionNotFound, id, e.why)
	}
	return nil, fmt.Errorf("%w: %q", ErrSessionNotFound, id)
}

// forget removes a session whose end the model has seen.
func (m *Sessions) forget(s *session, why string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forgetLocked(s, why)
}

func (m *Sessions) forgetLocked(s *session, why string) {
	if m.byID[s.id] != s {
		return
	}
	delete(m.byID, s.id)
	if why != "" {
		m.ended[s.id] = endedSession{owner: s.owner, why: why}
		m.endedOrder = append(m.endedOrder, s.id)
		if len(m.endedOrder) > endedMemory {
			delete(m.ended, m.endedOrder[0])
			m.endedOrder = m.endedOrder[1:]
		}
	}
}

// reap kills sessions idle for longer than IdleTimeout or past their
// lifetime, and forgets ended ones nobody polled for as long.
func (m *Sessions) reap() {
	now := m.opts.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.byID {
		idle := now.Sub(s.idleSince())
		switch {
		case idle > m.opts.IdleTimeout:
			why := fmt.Sprintf("killed after %s without a write_stdin or poll (the idle limit is %s)", idle.Round(time.Second), m.opts.IdleTimeout)
			if s.exited() {
				why = "it exited and was not polled for " + m.opts.IdleTimeout.String()
			}
			s.kill(why)
			m.forgetLocked(s, why)
			m.log.Info("exec session reaped", "session_id", s.id, "idle", idle.Round(time.Second))
		case !now.Before(s.deadline) && !s.exited():
			// Kept until the next poll, which shows its last output and
			// why it ended (or until it is idle too long).
			if s.kill(fmt.Sprintf("killed when it reached its lifetime of %s", s.deadline.Sub(s.started))) {
				m.log.Info("exec session reached its lifetime", "session_id", s.id)
			}
		}
	}
}

// SessionInfo describes one session for list_exec_sessions.
type SessionInfo struct {
	ID, Command, Dir string
	Running          bool
	Elapsed, Idle    time.Duration
	Remaining        time.Duration
}

// list returns owner's sessions, oldest first.
func (m *Sessions) list(owner string) []SessionInfo {
	m.reap()
	now := m.opts.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []SessionInfo
	for _, s := range m.byID {
		if s.owner != owner {
			continue
		}
		out = append(out, SessionInfo{ID: s.id, Command: s.command, Dir: s.dir, Running: !s.exited(),
			Elapsed: now.Sub(s.started), Idle: now.Sub(s.idleSince()), Remaining: max(0, s.deadline.Sub(now))})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Elapsed > out[j].Elapsed || out[i].Elapsed == out[j].Elapsed && out[i].ID < out[j].ID
	})
	return out
}

func newSessionID() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}
