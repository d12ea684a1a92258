// Package journal is the gateway's durable inbox: every inbound message is
// appended (and fsynced) to a journal file before the channel acknowledges
// it to its platform, and marked done once its turn is saved and the
// replies are published. On start the messages that were never marked done
// are replayed, so a crash or kill -9 mid-turn loses nothing. Messages are
// de-duplicated by channel and platform message id, so a platform that
// redelivers does not cause a second answer.
//
// File format: JSON lines, {"op":"add","msg":{...}} and {"op":"done","id":..}.
// The file is compacted (atomically rewritten with only the unfinished
// messages and the recent de-duplication keys) on open and when enough done
// lines have accumulated.
package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/nanobot-go/nanobot/gateway/bus"
	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// Options configure a journal.
type Options struct {
	// DedupKeys is how many recent message keys are remembered (10,000).
	DedupKeys int
	// CompactAfter compacts once this many done lines accumulated (1,000).
	CompactAfter int
	Log          *slog.Logger
}

type record struct {
	Op  string       `json:"op"` // add, done, seen
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
	f       *os.File
	seq     int64
	pending map[string]bus.Inbound // id -> message
	order   []string               // pending ids in arrival order
	seen    *dedupSet              // recent dedup keys
	done    int                    // done lines since the last compaction
}

// ErrDuplicate is returned by Add for a message already journaled.
var ErrDuplicate = errors.New("journal: duplicate message")

// Open opens (creating) the journal at path and returns the messages that
// were journaled but never marked done, oldest first.
func Open(path string, opts Options) (*Journal, []bus.Inbound, error) {
	if opts.DedupKeys <= 0 {
		opts.DedupKeys = 10000
	}
	if opts.CompactAfter <= 0 {
		opts.CompactAfter = 1000
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	j := &Journal{path: path, opts: opts, log: log, pending: map[string]bus.Inbound{}, seen: newDedupSet(opts.DedupKeys)}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, err
	}
	if err := j.load(); err != nil {
		return nil, nil, err
	}
	if err := j.compact(); err != nil {
		return nil, nil, err
	}
	var replay []bus.Inbound
	for _, id := range j.order {
		replay = append(replay, j.pending[id])
	}
	return j, replay, nil
}

func (j *Journal) load() error {
	data, err := os.ReadFile(j.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			// A torn last line from a crash, or damage: skip it.
			j.log.Warn("journal: skipping unreadable line", "file", j.path, "line", line)
			continue
		}
		switch r.Op {
		case "add":
			if r.Msg == nil {
				continue
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
		}
	}
	kept := j.order[:0]
	for _, id := range j.order {
		if _, ok := j.pending[id]; ok {
			kept = append(kept, id)
		}
	}
	j.order = kept
	return sc.Err()
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
	delete(j.pending, id)
	for i, o := range j.order {
		if o == id {
			j.order = append(j.order[:i], j.order[i+1:]...)
			break
		}
	}
	// Done lines need not be fsynced: losing one replays a finished message,
	// which the session's duplicate check and the user can live with far
	// better than a lost message.
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
	if j.f == nil {
		f, err := os.OpenFile(j.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		j.f = f
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if sync {
		if err := j.f.Sync(); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
	}
	return nil
}

// compact rewrites the file with the unfinished messages and the dedup keys.
func (j *Journal) compact() error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	j.seen.each(func(h uint64) { _ = enc.Encode(record{Op: "seen", Key: formatStored(h)}) })
	for _, id := range j.order {
		m := j.pending[id]
		_ = enc.Encode(record{Op: "add", ID: id, Msg: &m})
	}
	if err := atomicfile.Write(j.path, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("journal compact: %w", err)
	}
	// The append handle points at the replaced file; the next append
	// reopens the new one.
	if j.f != nil {
		_ = j.f.Close()
		j.f = nil
	}
	j.done = 0
	return nil
}

// Close closes the file.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}
