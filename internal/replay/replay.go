// Package replay remembers keys until a time, across restarts: the used
// one-time sign-in codes of internal/owner and the signatures and message
// ids of signed webhooks. Add reports whether a key is new, and a new key
// counts as seen only once that is on disk, so a restart never forgets a
// key whose request was accepted.
//
// The file is an internal/wal record file (mode 0600; one checksummed line
// per record, fsynced; a torn last line cut off at open) holding the
// SHA-256 of each key and the unix second after which it may be forgotten,
// never the key itself: a code or a signature in it would be one more copy
// of a secret. Expired and forgotten records are dropped whenever the file
// is rewritten: at open, and when it holds mostly such records, so it stays
// about the size of what is still remembered. A damaged line never fails a
// start: it is skipped with a warning (forgetting one key is better than
// refusing every request).
//
// A Set with no path remembers in memory only, until the process ends.
//
// Concurrency: a Set is safe for concurrent use, and of two concurrent Adds
// of one key exactly one reports it new. The fsync of an Add runs after the
// Set's lock is released, so concurrent Adds share the disk's latency
// instead of queueing behind each other. A file belongs to one process:
// nothing keeps a second writer out, so callers make sure only one process
// (the gateway) adds to it.
package replay

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/internal/wal"
)

// ErrFull is Add's refusal of a new key while Options.Max keys are still
// remembered: nothing is forgotten before its time to make room.
var ErrFull = errors.New("replay: too many keys within their window")

// Options configure a Set. The zero value remembers any number of keys by
// the wall clock.
type Options struct {
	// Max bounds how many keys are remembered at once (0: no bound).
	Max int
	// Now is the clock keys expire by (time.Now when nil).
	Now func() time.Time
	// Log gets the warnings about a damaged file or a failed compaction.
	Log *slog.Logger
	// Open opens the file (os.OpenFile when nil); tests inject faults.
	Open wal.OpenFunc
}

// sweepEvery is the fewest Adds between two scans for expired keys; a scan
// also waits for as many Adds as it left keys, so its cost per Add stays
// constant.
const sweepEvery = 64

// compactSlack is how many expired or forgotten records beyond the live
// ones the file may hold before it is rewritten.
const compactSlack = 64

type digest [sha256.Size]byte

// Set is a set of keys, each remembered until its own time.
type Set struct {
	path string
	opts Options

	mu         sync.Mutex
	loaded     bool
	file       *wal.Log // nil with no path
	seen       map[digest]time.Time
	earliest   time.Time // no key in seen expires before it
	records    int       // records in the file, live or not
	sinceSweep int       // Adds since the last scan for expired keys
	sweepAfter int       // how many Adds the next scan waits for
}

// New makes a Set kept in the file at path ("" for memory only). It does no
// IO: the file is read by Load, or by the first Add or Forget.
func New(path string, o Options) *Set {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Set{path: path, opts: o, seen: map[digest]time.Time{}, sweepAfter: sweepEvery}
}

// Load reads the file, if it was not read yet, and compacts it when that
// pays. Callers that want a broken file reported at start call it there;
// otherwise Add does. A failed Load is tried again by the next call.
func (s *Set) Load() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loadLocked()
}

func (s *Set) loadLocked() error {
	if s.loaded || s.path == "" {
		return nil
	}
	seen, records := map[digest]time.Time{}, 0
	l, err := wal.Open(s.path, wal.Options{Open: s.opts.Open, Log: s.opts.Log}, func(p []byte) error {
		records++
		d, until, ok := decode(p)
		switch {
		case !ok:
			s.opts.Log.Warn("replay: skipping a record that does not parse", "file", s.path, "line", records)
		case until.IsZero():
			delete(seen, d)
		default:
			seen[d] = until
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	s.file, s.seen, s.records, s.loaded = l, seen, records, true
	s.sweepLocked(s.opts.Now())
	if l.Worth(len(s.seen)) || s.mostlyDeadLocked() {
		s.compactLocked()
	}
	return nil
}

// Add remembers key until until and reports whether it was new: false
// when it is remembered already and its time has not passed. A new key is
// reported only once it is on disk; when it cannot be stored, Add returns
// the error and the key stays new. It returns ErrFull when Options.Max
// keys are remembered.
func (s *Set) Add(key string, until time.Time) (fresh bool, err error) {
	d := sha256.Sum256([]byte(key))
	until = ceilSecond(until)
	s.mu.Lock()
	if err := s.loadLocked(); err != nil {
		s.mu.Unlock()
		return false, err
	}
	now := s.opts.Now()
	s.maintainLocked(now)
	if u, ok := s.seen[d]; ok && now.Before(u) {
		s.mu.Unlock()
		return false, nil
	}
	if s.opts.Max > 0 && len(s.seen) >= s.opts.Max {
		if !now.Before(s.earliest) {
			s.sweepLocked(now)
		}
		if len(s.seen) >= s.opts.Max {
			s.mu.Unlock()
			return false, ErrFull
		}
	}
	var sync func() error
	if s.file != nil {
		if err := s.file.Append(encode(d, until), false); err != nil {
			s.mu.Unlock()
			return false, fmt.Errorf("replay: %w", err)
		}
		s.records++
		sync = s.file.Syncer()
	}
	s.seen[d] = until
	if until.Before(s.earliest) || len(s.seen) == 1 {
		s.earliest = until
	}
	s.mu.Unlock()
	if sync == nil {
		return true, nil
	}
	// A concurrent Add of the same key already sees it and answers false;
	// if this sync fails, both callers refuse, which is the safe way round.
	if err := sync(); err != nil {
		s.mu.Lock()
		s.file.SyncFailed(err)
		if u, ok := s.seen[d]; ok && u.Equal(until) {
			delete(s.seen, d)
		}
		s.mu.Unlock()
		return false, fmt.Errorf("replay: %w", err)
	}
	return true, nil
}

// Forget drops key before its time (a request that was refused after Add
// and may be sent again). When the record of that cannot be stored, the
// key is forgotten until the next start, and the error says so.
func (s *Set) Forget(key string) error {
	d := sha256.Sum256([]byte(key))
	s.mu.Lock()
	if err := s.loadLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	if _, ok := s.seen[d]; !ok {
		s.mu.Unlock()
		return nil
	}
	delete(s.seen, d)
	if s.file == nil {
		s.mu.Unlock()
		return nil
	}
	if err := s.file.Append(encode(d, time.Time{}), false); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("replay: %w", err)
	}
	s.records++
	sync := s.file.Syncer()
	s.mu.Unlock()
	if err := sync(); err != nil {
		s.mu.Lock()
		s.file.SyncFailed(err)
		s.mu.Unlock()
		return fmt.Errorf("replay: %w", err)
	}
	return nil
}

// Len is how many keys are remembered, some of which may have expired
// since the last scan.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

// Close syncs and closes the file. The Set stays usable: a later Add opens
// the file again.
func (s *Set) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file == nil {
		return nil
	}
	err := s.file.Syncer()()
	if cerr := s.file.Close(); err == nil {
		err = cerr
	}
	return err
}

// maintainLocked scans for expired keys every so many Adds and compacts
// the file when most of its records are dead.
func (s *Set) maintainLocked(now time.Time) {
	s.sinceSweep++
	if s.sinceSweep < s.sweepAfter {
		return
	}
	s.sweepLocked(now)
	if s.file != nil && s.mostlyDeadLocked() {
		s.compactLocked()
	}
}

// mostlyDeadLocked reports whether most of the file's records are of keys
// expired or forgotten.
func (s *Set) mostlyDeadLocked() bool { return s.records > 2*len(s.seen)+compactSlack }

func (s *Set) sweepLocked(now time.Time) {
	s.earliest = time.Time{}
	for d, u := range s.seen {
		if !now.Before(u) {
			delete(s.seen, d)
		} else if s.earliest.IsZero() || u.Before(s.earliest) {
			s.earliest = u
		}
	}
	s.sinceSweep, s.sweepAfter = 0, max(len(s.seen), sweepEvery)
}

// compactLocked rewrites the file with the live keys only. A failure (a
// full disk) is logged: the Set keeps appending to the file as it is.
func (s *Set) compactLocked() {
	recs := make([][]byte, 0, len(s.seen))
	for d, u := range s.seen {
		recs = append(recs, encode(d, u))
	}
	if err := s.file.Rewrite(recs); err != nil {
		s.opts.Log.Warn("replay: compaction failed", "file", s.path, "err", err)
		return
	}
	s.records = len(recs)
}

// A record is "<hex SHA-256 of the key> <unix seconds until>"; until 0
// forgets the key.
func encode(d digest, until time.Time) []byte {
	var u int64
	if !until.IsZero() {
		u = until.Unix()
	}
	b := make([]byte, 0, 2*len(d)+21)
	b = hex.AppendEncode(b, d[:])
	b = append(b, ' ')
	return strconv.AppendInt(b, u, 10)
}

func decode(p []byte) (d digest, until time.Time, ok bool) {
	h, u, found := bytes.Cut(p, []byte{' '})
	if !found || len(h) != 2*len(d) {
		return d, until, false
	}
	if _, err := hex.Decode(d[:], h); err != nil {
		return d, until, false
	}
	sec, err := strconv.ParseInt(string(u), 10, 64)
	if err != nil || sec < 0 {
		return d, until, false
	}
	if sec > 0 {
		until = time.Unix(sec, 0)
	}
	return d, until, true
}

// ceilSecond rounds t up to a whole second, the file's resolution, so that
// a key is never forgotten earlier after a restart than before it.
func ceilSecond(t time.Time) time.Time {
	c := time.Unix(t.Unix(), 0)
	if c.Before(t) {
		c = c.Add(time.Second)
	}
	return c
}
