// Package devstore keeps whatsmeow's device store (the linked device's keys,
// Signal sessions, prekeys, app state, contacts, the LID map…) in memory and
// saves it to one file, so the WhatsApp channel needs no SQL database.
//
// A Store implements every interface of go.mau.fi/whatsmeow/store with the
// semantics of whatsmeow's sqlstore (trust on first use for identities,
// GetOrGenPreKeys handing out unuploaded keys before generating new ones,
// app-state MACs cascading with their version, LID↔phone mappings, the
// decrypted-event buffer). It holds one device, like sqlstore's
// GetFirstDevice: pairing a different account resets everything but the
// LID map.
//
// Persistence: the whole state is encoded (gob, behind a magic header and a
// CRC-32 trailer) and written with internal/atomicfile, mode 0600: a crash
// leaves the previous or the new file, never a torn one, and a damaged file
// is refused with an error naming it. Writes are whole snapshots, so they
// are O(state) — a bot's state is tens to hundreds of KB. Two speeds:
//
//   - durable: the device, identities, sessions, prekeys, sender keys, app
//     state sync keys and buffered events are written before the mutating
//     call returns, because the Signal ratchet must not go backwards after
//     a crash (a lost session update makes the next messages undecryptable);
//   - debounced: contacts, push names, chat settings, app-state versions and
//     MACs, message secrets, privacy tokens, the LID map and the clearing
//     of a handled event's plaintext mark the state dirty and are written
//     within Options.Debounce (they change in bursts during app-state sync
//     and are re-fetched if lost; a lost clear only means the event is
//     handled once more). Close flushes.
//
// DoDecryptionTxn is a transaction like sqlstore's: mutations made with its
// context are undone if the function fails, and written once, with the
// buffered plaintext, when it succeeds.
//
// Concurrency: all methods are safe for concurrent use. One mutex guards the
// in-memory state (held briefly, never during IO); a second one serialises
// file writes and is held for the whole of a decryption transaction, so a
// snapshot never contains a transaction's uncommitted changes, and a durable
// write from another goroutine waits for an open transaction to end (whose
// commit then writes its change too).
package devstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// magic starts every store file; the digit is the format version.
const magic = "nanobot-whatsapp-devstore 1\n"

// ErrCorrupt is wrapped by Open when the file exists but is not a complete
// store written by this package.
var ErrCorrupt = errors.New("device store file is damaged or not a nanobot WhatsApp device store")

// Options tune a Store. The zero value is what the channel uses.
type Options struct {
	// Debounce is how long a chatty change (contacts, app state, LID map)
	// may wait before it is written (default 2 s).
	Debounce time.Duration
	// NoSync skips fsync (tests); writes stay atomic.
	NoSync bool
	// Log receives write failures of debounced saves (default slog.Default).
	Log *slog.Logger
}

// Store is the device store: open it with Open, take its device with
// Device, and Close it after the client disconnected.
type Store struct {
	path string
	opt  Options
	log  *slog.Logger

	mu      sync.Mutex // guards st, gen, timer, closed, migrated
	st      state
	pnToLID map[string]string // inverse of st.LIDToPN
	gen     uint64            // bumped by every mutation
	timer   *time.Timer       // pending debounced write
	closed  bool
	// migrated are the phone-number Signal users MigratePNToLID already
	// moved (per process, like sqlstore's cache).
	migrated map[string]bool

	wmu     sync.Mutex // serialises writes; held through a decryption txn
	written uint64     // gen of the file on disk; guarded by wmu
}

// Open reads the store at path, or starts an empty one if there is no file
// yet (it is created on the first save). A damaged file is an error
// wrapping ErrCorrupt; the file is left as it is.
func Open(path string, opt Options) (*Store, error) {
	if opt.Debounce <= 0 {
		opt.Debounce = 2 * time.Second
	}
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	s := &Store{path: path, opt: opt, log: opt.Log, migrated: map[string]bool{}}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("whatsapp device store: %w", err)
	default:
		if err := decode(data, &s.st); err != nil {
			return nil, fmt.Errorf("whatsapp device store %s: %w", path, err)
		}
	}
	s.st.init()
	removeStaleTemps(path)
	s.pnToLID = make(map[string]string, len(s.st.LIDToPN))
	for lid, pn := range s.st.LIDToPN {
		s.pnToLID[pn] = lid
	}
	return s, nil
}

// removeStaleTemps deletes the temporary files of writes a crash cut
// short (atomicfile names them ".<name>.tmp-*"); the store file itself is
// whole. Only one process uses a state folder, so none is in flight.
func removeStaleTemps(path string) {
	stale, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*"))
	for _, f := range stale {
		_ = os.Remove(f)
	}
}

// Path is the store's file.
func (s *Store) Path() string { return s.path }

// Close writes any pending change. The store stays usable (later changes
// are written at once), so a late callback of the client loses nothing.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.mu.Unlock()
	return s.Flush()
}

// Flush writes the state now if it changed since the last write.
func (s *Store) Flush() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.writeLocked()
}

// writeLocked encodes the current state and replaces the file; the caller
// holds wmu.
func (s *Store) writeLocked() error {
	s.mu.Lock()
	gen := s.gen
	if gen == s.written {
		s.mu.Unlock()
		return nil
	}
	data, err := encode(&s.st)
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("whatsapp device store: encode: %w", err)
	}
	if err := (atomicfile.Options{NoSync: s.opt.NoSync}).Write(s.path, data, 0o600); err != nil {
		return fmt.Errorf("whatsapp device store: %w", err)
	}
	s.written = gen
	return nil
}

// saved is called after a mutation (without mu held). durable changes are
// on disk when it returns (or, inside a decryption transaction, when the
// transaction commits); the others are written within the debounce.
func (s *Store) saved(ctx context.Context, durable bool) error {
	if s.txnOf(ctx) != nil {
		return nil
	}
	s.mu.Lock()
	closed := s.closed
	if !durable && !closed {
		if s.timer == nil {
			s.timer = time.AfterFunc(s.opt.Debounce, s.debounced)
		}
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	return s.Flush()
}

// debounced is the timer's write.
func (s *Store) debounced() {
	s.mu.Lock()
	s.timer = nil
	s.mu.Unlock()
	if err := s.Flush(); err != nil {
		s.log.Error("whatsapp device store: save failed; retrying with the next change", "error", err)
	}
}

// encode frames the state: magic, gob, CRC-32 (IEEE) of the gob bytes.
func encode(st *state) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(magic)
	if err := gob.NewEncoder(&buf).Encode(st); err != nil {
		return nil, err
	}
	sum := crc32.ChecksumIEEE(buf.Bytes()[len(magic):])
	return binary.BigEndian.AppendUint32(buf.Bytes(), sum), nil
}

// decode checks the frame and decodes the state.
func decode(data []byte, st *state) error {
	if !bytes.HasPrefix(data, []byte(magic)) {
		return fmt.Errorf("%w: unknown header", ErrCorrupt)
	}
	body := data[len(magic):]
	if len(body) < 4 {
		return fmt.Errorf("%w: truncated", ErrCorrupt)
	}
	payload, sum := body[:len(body)-4], binary.BigEndian.Uint32(body[len(body)-4:])
	if crc32.ChecksumIEEE(payload) != sum {
		return fmt.Errorf("%w: checksum mismatch (truncated or altered)", ErrCorrupt)
	}
	if err := gob.NewDecoder(bytes.NewReader(payload)).Decode(st); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return nil
}
