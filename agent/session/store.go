package session

import (
	"context"
	"errors"
	"time"

	"github.com/nanobot-go/nanobot/providers"
)

// Store persists sessions. Every method may block on IO. Implementations are
// safe for concurrent use and serialize calls for one key.
type Store interface {
	// Load returns the session for key, from cache or storage. A session
	// that does not exist yet is returned empty (not persisted until the
	// first write), never as an error.
	Load(ctx context.Context, key string) (*Session, error)
	// Append adds msgs to s.Messages and persists them, stamping messages
	// that have no Timestamp and setting s.UpdatedAt. On error s is
	// unchanged.
	Append(ctx context.Context, s *Session, msgs ...providers.Message) error
	// SetCursor moves s.LastConsolidated (0 <= lastConsolidated <=
	// len(s.Messages)) and persists it.
	SetCursor(ctx context.Context, s *Session, lastConsolidated int) error
	// SetMetadata sets s.Metadata[key] to value (which must encode as JSON;
	// nil deletes the key) and persists it.
	SetMetadata(ctx context.Context, s *Session, key string, value any) error
	// Rewrite atomically replaces the whole history of s with msgs and
	// sets the cursor (0 <= lastConsolidated <= len(msgs)), stamping
	// messages that have no Timestamp. It is for repairs and trims; normal
	// turns use Append, which keeps the prompt prefix stable. On error s and
	// its storage are unchanged.
	Rewrite(ctx context.Context, s *Session, msgs []providers.Message, lastConsolidated int) error
	// Archive keeps the current conversation aside and resets s, in place, to
	// an empty persisted session with the same key (the /new command).
	Archive(ctx context.Context, s *Session) error
	// List describes every stored session, in no particular order.
	List(ctx context.Context) ([]Info, error)
}

// Info describes a stored session for listings.
type Info struct {
	Key       string
	UpdatedAt time.Time
	// Messages is the message count, or -1 when it is not known without
	// reading the whole session.
	Messages int
}

// Errors callers may branch on.
var (
	// ErrForeignSession is returned when a *Session passed to a store was
	// not obtained from that store's Load.
	ErrForeignSession = errors.New("session was not loaded by this store")
	// ErrInvalidKey is returned for an empty session key.
	ErrInvalidKey = errors.New("invalid session key")
	// ErrInvalidCursor is returned for a cursor outside [0, len(messages)].
	ErrInvalidCursor = errors.New("cursor out of range")
	// ErrInvalidMessage is returned for a message that cannot be stored (it
	// has no role, so loading would skip it).
	ErrInvalidMessage = errors.New("invalid message")
)
