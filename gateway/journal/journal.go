// Package journal is the gateway's durable inbox: every inbound message is
// appended (and fsynced) to a journal file before the channel acknowledges
// it to its platform, and marked done once its turn is saved and the
// replies are published. On start the messages that were never marked done
// are replayed, so a crash or kill -9 mid-turn loses nothing. Messages are
// de-duplicated by channel and platform message id, so a platform that
// redelivers does not cause a second answer.
//
// File format: records of internal/wal (checksummed lines; a torn tail is
// cut off), each a JSON object: {"op":"add","msg":{...}}, {"op":"done",
// "id":..}, {"op":"seen","key":..} and {"op":"seq","id":..}. The file is
// compacted (atomically rewritten with only the unfinished messages, the
// recent de-duplication keys and the id counter) on open and when enough
// done lines have accumulated.
//
// A failed write (disk full) fails Add and leaves the journal as it was;
// Err reports it until a write succeeds again, without a restart. A done
// line that could not be written is kept in memory, and the next write
// first rewrites the file from memory, so a restart after the disk has
// room again does not answer that message a second time.
//
// Concurrency: a Journal is safe for concurrent use; one lock serializes
// Add, Done, Err, Pending and Close, so an fsync holds up the others for its
// duration. A Journal owns its file and takes no file lock: two Journals
// (in one process or two) must not open the same path.
package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/internal/option"
	"github.com/nanobot-go/nanobot/internal/wal"
)

// Options configure a journal.
type Options struct {
	// DedupKeys is how many recent message keys are remembered (10,000).
	DedupKeys int
	// CompactAfter compacts once this many done lines accumulated (1,000).
	CompactAfter int
	// Open opens the file (default os.OpenFile); tests inject faults.
	Open wal.OpenFunc
	Log  *slog.Logger
}

type record struct {
	Op  string       `json:"op"` // add, done, seen, seq
	ID  string       `json:"id,omitempty"`
	Key string       `json:"key,omitempty"`
	Msg *bus.Inbound `json:"msg,omitempty"`
}

// Journal is safe for concurrent use.
type Journal struct {
	path string
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	w       *wal.Log
	seq     int64
	pending map[string]bus.Inbound // id -> message
	order   []string               // ids in arrival order: the pending ones, and done ones until compact drops them
	seen    *dedupSet              // recent dedup keys
	done    int                    // done lines since the last compaction
	// stale is set when a done line could not be written (a full disk):
	// the file still holds a message memory knows is finished, and a
	// restart would answer it again. The next write first rewrites the
	// file from memory.
	stale bool
}

// ErrDuplicate is returned by Add for a message already journaled.
var ErrDuplicate = errors.New("journal: duplicate message")

// Open opens (creating) the journal at path and returns the messages that
// were journaled but never marked done, oldest first.
func Open(path string, opts Options) (*Journal, []bus.Inbound, error) {
	option.Positive(&opts.DedupKeys, 10000)
	option.Positive(&opts.CompactAfter, 1000)
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	j := &Journal{path: path, opts: opts, log: log, pending: map[string]bus.Inbound{}, seen: newDedupSet(opts.DedupKeys)}
	w, err := wal.Open(path, wal.Options{Open: opts.Open, Log: log}, j.load)
	if err != nil {
		return nil, nil, fmt.Errorf("journal: %w", err)
	}
	j.w = w
	atOpen := func() error {
		if !w.Worth(1 + len(j.seen.set) + len(j.order)) {
			return nil
		}
		return j.compact()
	}
	replay := wal.Recovered(log, "journal", &j.order, j.pending, atOpen, func(m bus.Inbound) bus.Inbound { return m })
	return j, replay, nil
}

func (j *Journal) load(payload []byte) error {
	var r record
	if err := json.Unmarshal(payload, &r); err != nil {
		j.log.Warn("journal: skipping unreadable record", "file", j.path, "err", err)
		return nil
	}
	switch r.Op {
	case "add":
		if r.Msg == nil {
			return nil
		}
		j.bumpSeq(r.ID)
		j.pending[r.ID] = *r.Msg
		j.order = append(j.order, r.ID)
		j.remember(r.Key)
	case "done":
		delete(j.pending, r.ID)
	case "seen":
		if r.Key != "" {
			j.seen.add(parseStored(r.Key))
		}
	case "seq":
		j.bumpSeq(r.ID)
	}
	return nil
}

func (j *Journal) bumpSeq(id string) {
	if n, err := strconv.ParseInt(id, 10, 64); err == nil && n > j.seq {
		j.seq = n
	}
}

func (j *Journal) remember(key string) {
	if key != "" {
		j.seen.add(hashKey(key))
	}
}

func dedupKey(m bus.Inbound) string {
	if m.MessageID == "" {
		return ""
	}
	return m.Channel + "\x00" + m.ChatID + "\x00" + m.MessageID
}

// Add journals m durably and returns it with its journal ID set. A message
// whose platform id was seen before returns ErrDuplicate.
func (j *Journal) Add(m bus.Inbound) (bus.Inbound, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	key := dedupKey(m)
	if key != "" && j.seen.has(hashKey(key)) {
		return m, ErrDuplicate
	}
	j.seq++
	m.ID = strconv.FormatInt(j.seq, 10)
	if err := j.write(record{Op: "add", ID: m.ID, Key: key, Msg: &m}, true); err != nil {
		return m, err
	}
	j.pending[m.ID] = m
	j.order = append(j.order, m.ID)
	j.remember(key)
	return m, nil
}

// Done marks a message finished. Unknown ids are ignored.
func (j *Journal) Done(id string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, ok := j.pending[id]; !ok {
		return nil
	}
	delete(j.pending, id) // order keeps id until the next compaction
	// Done lines need not be fsynced: losing one replays a finished
	// message, which the session's duplicate check answers from the stored
	// turn and whose reply the outbox does not send a second time.
	if err := j.write(record{Op: "done", ID: id}, false); err != nil {
		return err
	}
	j.done++
	if j.done >= j.opts.CompactAfter {
		return j.compact()
	}
	return nil
}

// Pending returns how many messages are unfinished.
func (j *Journal) Pending() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.pending)
}

func (j *Journal) write(r record, sync bool) error {
	if j.stale {
		if err := j.compact(); err != nil {
			return err
		}
	}
	if err := wal.AppendJSON(j.w, r, sync); err != nil {
		if r.Op == "done" {
			j.stale = true
		}
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// Err returns the last write failure (disk full), nil once a write
// succeeded again.
func (j *Journal) Err() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.w.Err()
}

// compact rewrites the file with the id counter, the dedup keys and the
// unfinished messages. The counter keeps ids unique after every message
// is done: the outbox keys a turn's replies by them.
func (j *Journal) compact() error {
	j.order = wal.Present(j.order, j.pending)
	recs := []record{{Op: "seq", ID: strconv.FormatInt(j.seq, 10)}}
	j.seen.each(func(h uint64) { recs = append(recs, record{Op: "seen", Key: formatStored(h)}) })
	for _, id := range j.order {
		m := j.pending[id]
		recs = append(recs, record{Op: "add", ID: id, Msg: &m})
	}
	if err := wal.RewriteJSON(j.w, recs); err != nil {
		return fmt.Errorf("journal compact: %w", err)
	}
	j.done = 0
	j.stale = false
	return nil
}

// Close closes the file.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.w.Close()
}
