package recall

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// IndexDir is where an agent's index lives, under its workspace.
const IndexDir = "memory/.index"

// IndexOptions configures an Index.
type IndexOptions struct {
	// Workspace holds memory/MEMORY.md and memory/HISTORY.md, and the
	// index under IndexDir.
	Workspace string
	// Feed is the session store; nil indexes the memory files only.
	Feed Feed
	// Embedder, when set, adds a vector to every piece and makes searches
	// hybrid; nil: lexical only.
	Embedder Embedder
	// Idle is how long a loaded index stays in memory unused before it is
	// saved and let go (default 10 minutes; the next search loads it
	// again).
	Idle time.Duration
	// Logger receives rebuilds, save failures and embedding failures.
	Logger *slog.Logger

	// write saves the index file (tests inject a full disk through it).
	write atomicfile.Options
}

// Index is memory_search's persistent index of an agent's memory files
// and conversations: BM25 over words and, with an Embedder, vectors.
//
// It is brought up to date before each search (only what was added to a
// file since is read, and at most one batch embedded) and, after Notify,
// in the background (a larger backlog of embeddings too); it is saved to
// IndexDir (written whole to a temporary file, then renamed) at most every
// saveEvery, so a restart reads on from where it stood. A saved index
// that cannot be read is rebuilt from the files.
//
// Concurrency: an Index is safe for concurrent use. One update runs at a
// time; a search that finds one running searches what is loaded instead
// of waiting for its file and network IO (only the first load is waited
// for), and the update's changes are applied under a lock searches hold
// only while they score.
type Index struct {
	opts IndexOptions
	log  *slog.Logger
	path string

	update sync.Mutex // one update (refresh or save) at a time

	mu       sync.RWMutex
	st       *state // nil until loaded, and after an idle unload
	dirty    bool   // st has changes not saved
	current  bool   // st was brought up to date with the files since it was loaded
	saved    time.Time
	lastUse  time.Time
	unloader *time.Timer
	embedErr string // the last embedding failure, once per kind
	closed   bool
	pending  bool // a background update is scheduled

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewIndex returns the index of opts.Workspace; it reads nothing and
// starts nothing until the first search. Close it when done.
func NewIndex(opts IndexOptions) *Index {
	if opts.Idle <= 0 {
		opts.Idle = 10 * time.Minute
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	x := &Index{
		opts: opts, log: log.With("component", "recall"),
		path: filepath.Join(opts.Workspace, IndexDir, "index.gob"),
	}
	x.ctx, x.cancel = context.WithCancel(context.Background())
	return x
}

// Notify tells the index that a turn was saved: a loaded index reads it
// shortly after in the background (a burst of saves is read once), so the
// next search has less to do; an index not loaded leaves it to the next
// search. It never blocks.
func (x *Index) Notify() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed || x.st == nil || x.pending {
		return
	}
	x.pending = true
	x.wg.Add(1)
	go x.later()
}

// Close stops the background work and saves what is unsaved.
func (x *Index) Close() error {
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return nil
	}
	x.closed = true
	if x.unloader != nil {
		x.unloader.Stop()
	}
	x.mu.Unlock()
	x.cancel()
	x.wg.Wait()
	x.update.Lock()
	defer x.update.Unlock()
	return x.saveLocked()
}

// later is the update Notify schedules.
func (x *Index) later() {
	defer x.wg.Done()
	t := time.NewTimer(notifyDelay)
	defer t.Stop()
	select {
	case <-x.ctx.Done():
		return
	case <-t.C:
	}
	x.mu.Lock()
	x.pending = false // a save from now on schedules another
	x.mu.Unlock()
	ctx, cancel := context.WithTimeout(x.ctx, refreshTimeout)
	defer cancel()
	x.update.Lock()
	more, err := x.updateLocked(ctx, embedPerRefresh)
	if err == nil {
		err = x.saveIfDue()
	}
	x.update.Unlock()
	if err != nil && ctx.Err() == nil {
		x.log.Warn("memory index: update failed", "err", err)
	}
	if more && err == nil {
		x.Notify() // a backlog to embed: go on shortly
	}
}

const (
	notifyDelay    = 2 * time.Second
	refreshTimeout = 5 * time.Minute
)

// Refresh brings the index up to date with the files, embeds up to
// embedPerRefresh new pieces, and saves it.
func (x *Index) Refresh(ctx context.Context) error {
	x.update.Lock()
	defer x.update.Unlock()
	if _, err := x.updateLocked(ctx, embedPerRefresh); err != nil {
		return err
	}
	return x.saveIfDue()
}

// updateLocked loads, reads what changed and embeds up to embed pieces;
// more reports pieces still to embed. x.update is held. It does not save:
// a search must not wait for the whole index to be written.
func (x *Index) updateLocked(ctx context.Context, embed int) (more bool, err error) {
	if err := x.loadLocked(); err != nil {
		return false, err
	}
	if err := x.refreshLocked(ctx); err != nil {
		return false, err
	}
	x.mu.Lock()
	x.current = true
	x.mu.Unlock()
	return x.embedLocked(ctx, embed), nil
}

// saveIfDue saves when the last save is saveEvery old. x.update is held.
func (x *Index) saveIfDue() error {
	x.mu.RLock()
	due := time.Since(x.saved) >= saveEvery
	x.mu.RUnlock()
	if !due {
		return nil // a crash before the next save costs a re-read, never a loss
	}
	return x.saveLocked()
}

// saveEvery spaces the saves of a busy index: the whole index is written
// each time, and what a crash loses is only read again from the files.
const saveEvery = 30 * time.Second

// loadLocked reads the saved index when none is loaded; a missing one
// starts empty, a damaged one is logged and rebuilt. x.update is held.
func (x *Index) loadLocked() error {
	x.mu.RLock()
	loaded := x.st != nil
	x.mu.RUnlock()
	if loaded {
		x.touch()
		return nil
	}
	began := time.Now()
	st, err := readState(x.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		st = newState()
	case err != nil:
		x.log.Warn("memory index: the saved index cannot be read; rebuilding it from the files", "path", x.path, "err", err)
		st = newState()
	default:
		x.log.Debug("memory index loaded", "pieces", st.live, "took", time.Since(began).Round(time.Millisecond))
	}
	x.mu.Lock()
	x.st = st
	x.mu.Unlock()
	x.touch()
	return nil
}

// touch marks the index used now and (re)arms the idle unload.
func (x *Index) touch() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.lastUse = time.Now()
	if x.closed {
		return
	}
	if x.unloader == nil {
		x.unloader = time.AfterFunc(x.opts.Idle, x.unloadIfIdle)
	} else {
		x.unloader.Reset(x.opts.Idle)
	}
}

// unloadIfIdle saves and lets go of an index unused for Idle.
func (x *Index) unloadIfIdle() {
	x.update.Lock()
	defer x.update.Unlock()
	x.mu.RLock()
	idle := time.Since(x.lastUse) >= x.opts.Idle && x.st != nil
	x.mu.RUnlock()
	if !idle {
		return
	}
	if err := x.saveLocked(); err != nil {
		x.log.Warn("memory index: save failed; keeping it in memory", "err", err)
		return
	}
	x.mu.Lock()
	x.st, x.current = nil, false
	x.mu.Unlock()
}

// saveLocked writes a changed index. x.update is held; searches go on
// while it is encoded (under the read lock) and written (under none).
func (x *Index) saveLocked() error {
	x.mu.RLock()
	if x.st == nil || !x.dirty {
		x.mu.RUnlock()
		return nil
	}
	data, err := x.st.encode()
	x.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("memory index: encode: %w", err)
	}
	if err := x.opts.write.Write(x.path, data, 0o600); err != nil {
		return fmt.Errorf("memory index: save: %w", err)
	}
	x.mu.Lock()
	x.dirty, x.saved = false, time.Now()
	x.mu.Unlock()
	return nil
}

// Stats describes a loaded index, for the benchmark and the logs.
type Stats struct {
	// Pieces are the searchable pieces; Embedded those with a vector.
	Pieces, Embedded int
	// Terms is the number of distinct terms.
	Terms int
	// DiskBytes is the size of the saved index.
	DiskBytes int64
}

// Stats returns the index's figures (loading it if needed).
func (x *Index) Stats() Stats {
	var s Stats
	x.mu.RLock()
	if x.st != nil {
		s.Pieces, s.Terms = x.st.live, len(x.st.post)
		for _, d := range x.st.Docs {
			if !d.Dead && d.Vec != nil {
				s.Embedded++
			}
		}
	}
	x.mu.RUnlock()
	if fi, err := os.Stat(x.path); err == nil {
		s.DiskBytes = fi.Size()
	}
	return s
}

// contentSum fingerprints a whole (small) file.
func contentSum(data []byte) uint64 {
	sum := sha256.Sum256(data)
	return binary.LittleEndian.Uint64(sum[:8])
}

// ready reports whether the index in memory was brought up to date with
// the files since it was loaded: a search may then use it while another
// update runs, rather than wait.
func (x *Index) ready() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.st != nil && x.current
}

// loaded reports whether the index is in memory.
func (x *Index) loaded() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.st != nil
}
