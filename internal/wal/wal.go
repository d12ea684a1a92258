// Package wal is the append-only record file under the gateway's durable
// inbox (gateway/journal) and outbox (gateway/outbox): one record per line,
// each line carrying a checksum of its payload, appended and (when asked)
// fsynced; rewritten atomically (temp file + rename) to compact it.
//
// A torn tail never hides the next record. On Open, bytes after the last
// complete line (a crash mid-write) are cut off. At run time a failed write
// (disk full: ENOSPC, EDQUOT, EIO) is truncated away at once, or before
// the next write, which fails while that is impossible. A line whose start is
// damaged but which still holds an intact record further in (files written
// before this format, where a torn tail and the next record shared a line)
// gives that record back.
//
// Line format: "~" + 8 hex digits of the payload's CRC-32C + " " + payload
// + "\n". Lines that are plain JSON objects (the format before checksums)
// are read as they are.
//
// Concurrency: a Log is not safe for concurrent use; its owner serializes
// calls (the journal and the outbox hold their own mutex).
package wal

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// File is what the log needs of an open file; tests wrap it to inject
// write and sync failures.
type File interface {
	io.Writer
	Sync() error
	Truncate(size int64) error
	Close() error
}

// OpenFunc opens a file like os.OpenFile.
type OpenFunc func(name string, flag int, perm os.FileMode) (File, error)

func osOpen(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Options configure a Log.
type Options struct {
	// Open opens the log file and compaction temp files (default
	// os.OpenFile); tests inject faults here.
	Open OpenFunc
	Log  *slog.Logger
}

// Log is one record file.
type Log struct {
	path string
	open OpenFunc
	log  *slog.Logger

	f    File
	size int64 // bytes of intact records in the file
	// torn is set while a failed write may have left bytes after size.
	torn bool
	err  error // the last write failure; nil once a write succeeded
	// read is how many records Open found, damaged whether one of them
	// (or a torn tail) was not intact.
	read    int
	damaged bool
}

// WriteError is a record that could not be stored. Full reports a storage
// shortage (out of space or quota) or an IO error of the device.
type WriteError struct {
	Path string
	Err  error
}

func (e *WriteError) Error() string {
	return fmt.Sprintf("cannot store record in %s: %v", e.Path, e.Err)
}
func (e *WriteError) Unwrap() error { return e.Err }

// Full reports whether the failure is the storage being full or failing
// (ENOSPC, EDQUOT, EIO), which may pass without a restart.
func (e *WriteError) Full() bool {
	return errors.Is(e.Err, syscall.ENOSPC) || errors.Is(e.Err, syscall.EDQUOT) || errors.Is(e.Err, syscall.EIO)
}

// Open reads the records at path (a missing file is an empty log), calling
// each with every intact record's payload in order, and cuts off a torn
// tail. An error from each stops the read and is returned.
func Open(path string, opts Options, each func(payload []byte) error) (*Log, error) {
	l := &Log{path: path, open: opts.Open, log: opts.Log}
	if l.open == nil {
		l.open = osOpen
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, err
	}
	good := int64(bytes.LastIndexByte(data, '\n') + 1)
	if good < int64(len(data)) {
		l.log.Warn("wal: cutting off a torn last record", "file", path, "bytes", int64(len(data))-good)
		l.damaged = true
		if err := os.Truncate(path, good); err != nil {
			return nil, fmt.Errorf("%s: cut torn tail: %w", path, err)
		}
	}
	l.size = good
	line := 0
	for rest := data[:good]; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		raw := rest[:i]
		rest = rest[i+1:]
		line++
		if len(raw) == 0 {
			continue
		}
		l.read++
		payload, ok := decode(raw)
		if !ok {
			l.damaged = true
			payload, ok = salvage(raw)
			l.log.Warn("wal: damaged line", "file", path, "line", line, "recovered", ok)
			if !ok {
				continue
			}
		}
		if err := each(payload); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, line, err)
		}
	}
	return l, nil
}

var table = crc32.MakeTable(crc32.Castagnoli)

// encode frames payload as one line.
func encode(payload []byte) []byte {
	b := make([]byte, 0, len(payload)+11)
	b = fmt.Appendf(b, "~%08x ", crc32.Checksum(payload, table))
	b = append(b, payload...)
	return append(b, '\n')
}

// decode returns the payload of an intact line (without its newline).
func decode(raw []byte) ([]byte, bool) {
	if len(raw) >= 10 && raw[0] == '~' && raw[9] == ' ' {
		var sum [4]byte
		if _, err := hex.Decode(sum[:], raw[1:9]); err != nil {
			return nil, false
		}
		payload := raw[10:]
		want := uint32(sum[0])<<24 | uint32(sum[1])<<16 | uint32(sum[2])<<8 | uint32(sum[3])
		return payload, crc32.Checksum(payload, table) == want
	}
	if len(raw) > 0 && raw[0] == '{' && json.Valid(raw) {
		return raw, true // written before checksums
	}
	return nil, false
}

// salvage finds an intact record that starts inside a damaged line: the
// next record appended after a torn one, on the same line.
func salvage(raw []byte) ([]byte, bool) {
	for i := 1; i < len(raw); i++ {
		if raw[i] != '~' && raw[i] != '{' {
			continue
		}
		if p, ok := decode(raw[i:]); ok && (raw[i] == '~' || bytes.HasPrefix(raw[i:], []byte(`{"op"`))) {
			return p, true
		}
	}
	return nil, false
}

// Append writes one record (payload must not contain a newline), fsynced
// when sync is set. A failed append leaves the file as it was; the next
// append may succeed (space came back).
func (l *Log) Append(payload []byte, sync bool) error {
	if bytes.IndexByte(payload, '\n') >= 0 {
		return fmt.Errorf("wal: record for %s contains a newline", l.path)
	}
	err := l.append(encode(payload), sync)
	if err != nil {
		err = &WriteError{Path: l.path, Err: err}
		if l.err == nil {
			l.log.Error("wal: write failed", "file", l.path, "err", err)
		}
	} else if l.err != nil {
		l.log.Info("wal: writing works again", "file", l.path)
	}
	l.err = err
	return err
}

func (l *Log) append(line []byte, sync bool) error {
	if l.f == nil {
		f, err := l.open(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		l.f = f
	}
	if l.torn {
		// A failed write left bytes behind that could not be cut off then:
		// cut them now, or write nothing (appending behind them would glue
		// the next record to the torn one; at a restart Open cuts them).
		if err := l.f.Truncate(l.size); err != nil {
			return err
		}
		l.torn = false
	}
	n, err := l.f.Write(line)
	if err == nil && sync {
		err = l.f.Sync()
	}
	if err != nil {
		if n > 0 || sync {
			l.torn = true
			if l.f.Truncate(l.size) == nil {
				l.torn = false
			}
		}
		return err
	}
	l.size += int64(n)
	return nil
}

// Err returns the last write failure, or nil once a write succeeded.
func (l *Log) Err() error { return l.err }

// Syncer returns a function that fsyncs what has been appended so far. It
// is taken under the owner's lock and called after releasing it, so one
// writer's fsync does not hold up the others' appends (the outbox records a
// send the platform accepted while another reply is being fsynced: every
// moment that record waits is a moment a kill repeats the send). Several
// fsyncs may then run at once; each covers everything appended before it.
// A file replaced by Rewrite (which fsyncs what it writes) or closed since
// counts as synced.
func (l *Log) Syncer() func() error {
	f := l.f
	if f == nil {
		return func() error { return nil }
	}
	return func() error {
		if err := f.Sync(); err != nil && !errors.Is(err, os.ErrClosed) {
			return &WriteError{Path: l.path, Err: err}
		}
		return nil
	}
}

// SyncFailed records that a sync from Syncer failed (called under the
// owner's lock): Err reports it until the next successful append.
func (l *Log) SyncFailed(err error) {
	if l.err == nil {
		l.log.Error("wal: sync failed", "file", l.path, "err", err)
	}
	l.err = err
}

// Present returns the ids that are still keys of m, in their order: what
// is unfinished after a replay added and finished records (it reuses ids'
// storage).
func Present[V any](ids []string, m map[string]V) []string {
	kept := ids[:0]
	for _, id := range ids {
		if _, ok := m[id]; ok {
			kept = append(kept, id)
		}
	}
	return kept
}

// Worth reports whether compacting the file Open read is worth its cost
// (a rewrite and two or three fsyncs, several milliseconds of every
// start): when a record was damaged, or when the file holds many more
// records than the live ones a compaction would keep. A store that keeps
// a few hundred records across restarts is replayed as it is; its own
// compaction after so many changes still bounds it.
func (l *Log) Worth(live int) bool {
	return l.damaged || l.read > 2*live+compactSlack
}

// compactSlack is how many records beyond twice the live ones a file may
// hold before a compaction at open pays.
const compactSlack = 256

// Recovered finishes opening a store kept in a log: it trims *order to the
// ids still pending (see Present), calls compact (which compacts the file
// when Worth says so; a failure, such as a full disk at start, is only
// logged: the store keeps going on the file as it is) and returns what
// each pending entry holds, oldest first.
func Recovered[V, T any](log *slog.Logger, store string, order *[]string, pending map[string]V, compact func() error, value func(V) T) []T {
	*order = Present(*order, pending)
	if err := compact(); err != nil {
		log.Warn(store+": compaction failed", "err", err)
	}
	var out []T
	for _, id := range *order {
		out = append(out, value(pending[id]))
	}
	return out
}

// AppendJSON appends r as one JSON record (see Append).
func AppendJSON[T any](l *Log, r T, sync bool) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("wal: encode a record for %s: %w", l.path, err)
	}
	return l.Append(b, sync)
}

// RewriteJSON replaces the file with recs, one JSON record each (see
// Rewrite).
func RewriteJSON[T any](l *Log, recs []T) error {
	payloads := make([][]byte, 0, len(recs))
	for _, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("wal: encode a record for %s: %w", l.path, err)
		}
		payloads = append(payloads, b)
	}
	return l.Rewrite(payloads)
}

// Rewrite replaces the file with the given records atomically (temp file,
// fsync, rename, fsync of the folder). On failure the old file stays.
func (l *Log) Rewrite(payloads [][]byte) error {
	var buf bytes.Buffer
	for _, p := range payloads {
		if bytes.IndexByte(p, '\n') >= 0 {
			return fmt.Errorf("wal: record for %s contains a newline", l.path)
		}
		buf.Write(encode(p))
	}
	tmp := fmt.Sprintf("%s.tmp-%d", l.path, time.Now().UnixNano())
	f, err := l.open(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return &WriteError{Path: tmp, Err: err}
	}
	_, err = f.Write(buf.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return &WriteError{Path: tmp, Err: err}
	}
	if l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
	if err := os.Rename(tmp, l.path); err != nil {
		_ = os.Remove(tmp)
		return &WriteError{Path: l.path, Err: err}
	}
	if d, err := os.Open(filepath.Dir(l.path)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	l.size, l.torn = int64(buf.Len()), false
	return nil
}

// Close closes the file.
func (l *Log) Close() error {
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
