package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/providers"
)

// FileStoreOptions configures a FileStore. The zero value is usable.
type FileStoreOptions struct {
	// Logger receives warnings about damaged files (default: discard).
	Logger *slog.Logger
	// MaxCached is how many sessions stay in memory when nobody holds them
	// (default 256). Evicted sessions are read from disk again on Load.
	MaxCached int
	// NoSync skips fsync (tests, benchmarks, throwaway data). By default
	// every write is durable when the call returns.
	NoSync bool
	// CompactAfter is how many metadata lines a file may collect before a
	// cursor or metadata update rewrites it with a single one (default 64).
	CompactAfter int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// FileStore keeps one JSONL file per session in a folder (0700; files 0600).
//
// Layout, shared with the Python nanobot: the first line is a metadata line
//
//	{"_type":"metadata","key":"telegram:42","created_at":"...","updated_at":"...","last_consolidated":0,"metadata":{}}
//
// and every further line is one providers.Message in its JSON form, with a
// timestamp. Appending messages writes only the new lines. Moving the cursor
// or changing metadata appends another metadata line (the loader applies
// them in order, last one wins, as the Python loader does); after
// CompactAfter of them the file is rewritten with one metadata line first.
// Rewrites and the creation of a file are atomic (temporary file, fsync,
// rename, fsync of the folder), so a crash leaves either the old or the new
// file. A crash during an append can leave a torn last line: loading drops it
// with a warning and the next write cuts it off, so no good line is lost and
// the file stays valid. A corrupt line elsewhere is skipped with a warning.
// Rewrites re-encode messages, so fields unknown to providers.Message (from
// other writers) do not survive compaction.
//
// File names are a reversible encoding of the key (see encodeKey). Python
// nanobot files ("telegram_42.jsonl") are adopted and renamed on first Load.
// One process owns a folder: FileStore does not lock files against other
// writers. On case-insensitive file systems, keys that differ only in case
// share a file.
type FileStore struct {
	metaWrites
	dir          string
	log          *slog.Logger
	sync         bool
	compactAfter int
	now          func() time.Time
	cache        *cache
	locks        keyLocks

	// wrapRewrite wraps the writer of atomic rewrites (tests inject faults).
	wrapRewrite func(io.Writer) io.Writer
}

var _ Store = (*FileStore)(nil)

// fileState is what a FileStore knows about a session's file.
type fileState struct {
	stem   string
	exists bool
	// size is where the next line goes; bytes after it are garbage to cut
	// when truncate is set (torn line, failed write).
	size        int64
	truncate    bool
	needNewline bool
	metaLines   int
	// headerOK is set when the first line is a metadata line; otherwise the
	// next metadata update rewrites the file to put one there.
	headerOK bool
	// staleMeta is set when the cursor on disk was out of range and got
	// clamped: the next append also writes a metadata line, so the file
	// says what memory says once it holds more messages.
	staleMeta bool
}

// NewFileStore opens (creating if needed) the session folder dir and removes
// temporary files a crash left behind.
func NewFileStore(dir string, opts FileStoreOptions) (*FileStore, error) {
	if dir == "" {
		return nil, errors.New("session: empty folder name")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("session: create folder: %w", err)
	}
	f := &FileStore{
		dir:          dir,
		log:          opts.Logger,
		sync:         !opts.NoSync,
		compactAfter: opts.CompactAfter,
		now:          opts.Now,
	}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	if f.compactAfter <= 0 {
		f.compactAfter = 64
	}
	if f.now == nil {
		f.now = time.Now
	}
	maxCached := opts.MaxCached
	if maxCached <= 0 {
		maxCached = 256
	}
	f.cache = newCache(maxCached)
	f.metaWrites = metaWrites{f}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("session: read folder: %w", err)
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, ".") && strings.Contains(n, fileExt+".tmp-") {
			if err := os.Remove(filepath.Join(dir, n)); err != nil {
				f.log.Warn("session: cannot remove stale temporary file", "file", n, "err", err)
			}
		}
	}
	return f, nil
}

func (f *FileStore) path(stem string) string { return filepath.Join(f.dir, stem+fileExt) }

// Load implements Store.
func (f *FileStore) Load(ctx context.Context, key string) (*Session, error) {
	if key == "" {
		return nil, fmt.Errorf("session: load: %w", ErrInvalidKey)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s := f.cache.get(key); s != nil {
		return s, nil
	}
	unlock := f.locks.lock(key)
	defer unlock()
	if s := f.cache.get(key); s != nil {
		return s, nil
	}
	s, err := f.read(key)
	if err != nil {
		return nil, fmt.Errorf("session: load %q: %w", key, err)
	}
	f.cache.add(s)
	return s, nil
}

// read builds the session of key from its file, a Python nanobot file, or
// nothing. The caller holds the key's lock.
func (f *FileStore) read(key string) (*Session, error) {
	stem := encodeKey(key)
	path := f.path(stem)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		data, err = f.adoptLegacy(key, path)
	}
	if err != nil {
		return nil, err
	}
	s := &Session{Key: key, Metadata: map[string]any{}, owner: f, file: fileState{stem: stem}}
	if data == nil {
		now := f.now()
		s.CreatedAt, s.UpdatedAt = now, now
		return s, nil
	}
	p := parseFile(data, f.log.With("session", key))
	s.Messages = p.messages
	s.file.exists = true
	s.file.size, s.file.truncate, s.file.needNewline = p.size, p.truncate, p.needNewline
	s.file.metaLines, s.file.headerOK = p.metaLines, p.headerOK
	if m := p.meta; m != nil {
		if m.Key != "" && m.Key != key {
			f.log.Warn("session file belongs to another key", "session", key, "file_key", m.Key)
		}
		s.CreatedAt, s.UpdatedAt = parseTime(m.CreatedAt), parseTime(m.UpdatedAt)
		s.LastConsolidated = m.LastConsolidated
		if m.Metadata != nil {
			s.Metadata = m.Metadata
		}
	}
	if n := len(s.Messages); n > 0 {
		if t := parseTime(s.Messages[n-1].Timestamp); t.After(s.UpdatedAt) {
			s.UpdatedAt = t
		}
		if s.CreatedAt.IsZero() {
			s.CreatedAt = parseTime(s.Messages[0].Timestamp)
		}
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = f.now()
	}
	if s.UpdatedAt.IsZero() {
		s.UpdatedAt = s.CreatedAt
	}
	if c := s.LastConsolidated; c < 0 || c > len(s.Messages) {
		f.log.Warn("session cursor out of range; clamped", "session", key, "last_consolidated", c, "messages", len(s.Messages))
		s.LastConsolidated = min(max(c, 0), len(s.Messages))
		s.file.staleMeta = true
	}
	return s, nil
}

// adoptLegacy renames a Python nanobot session file of key to its new name
// and returns its content; nil, nil when there is none.
func (f *FileStore) adoptLegacy(key, path string) ([]byte, error) {
	stem, ok := legacyStem(key)
	if !ok {
		return nil, nil
	}
	old := f.path(stem)
	data, err := os.ReadFile(old)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if m, err := readMetaLine(old); err == nil && m.Key != "" && m.Key != key {
		return nil, nil // the lossy legacy name belongs to another key
	}
	if err := os.Rename(old, path); err != nil {
		return nil, fmt.Errorf("adopt %s: %w", filepath.Base(old), err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, err
	}
	if f.sync {
		if err := syncDir(f.dir); err != nil {
			return nil, err
		}
	}
	f.log.Info("adopted python nanobot session file", "session", key, "from", filepath.Base(old))
	return data, nil
}

// own locks s's key and checks that s came from this store.
func (f *FileStore) own(ctx context.Context, op string, s *Session) (unlock func(), err error) {
	return lockOwn(ctx, f, &f.locks, op, s)
}

// Append implements Store. It writes only the new lines.
func (f *FileStore) Append(ctx context.Context, s *Session, msgs ...providers.Message) error {
	return writeStamped(ctx, f, "append to", s, msgs, func(add []providers.Message, now time.Time) error {
		return f.appendStamped(s, add, now)
	})
}

func (f *FileStore) appendStamped(s *Session, add []providers.Message, now time.Time) error {
	if len(add) == 0 {
		return nil
	}
	meta := f.metaOf(s, s.LastConsolidated, s.Metadata, now)
	lines, err := appendMessageLines(nil, add)
	if err == nil && s.file.staleMeta {
		lines, err = appendMetaLine(lines, meta)
	}
	if err != nil {
		return fmt.Errorf("session: append to %q: %w", s.Key, err)
	}
	// Spare capacity past len is invisible to everyone, so appending in
	// place is safe even if the write fails.
	all := append(s.Messages, add...)
	rewrote, err := f.appendOrRewrite(s, lines, all, meta)
	if err != nil {
		return fmt.Errorf("session: append to %q: %w", s.Key, err)
	}
	if s.file.staleMeta && !rewrote {
		s.file.metaLines++
	}
	s.file.staleMeta = false
	s.mu.Lock()
	s.Messages, s.UpdatedAt = all, now
	s.mu.Unlock()
	return nil
}

// Rewrite implements Store.
func (f *FileStore) Rewrite(ctx context.Context, s *Session, msgs []providers.Message, lastConsolidated int) error {
	if err := checkRewriteCursor(s, lastConsolidated, len(msgs)); err != nil {
		return err
	}
	return writeStamped(ctx, f, "rewrite", s, msgs, func(all []providers.Message, now time.Time) error {
		if err := f.rewrite(s, all, f.metaOf(s, lastConsolidated, s.Metadata, now)); err != nil {
			return fmt.Errorf("session: rewrite %q: %w", s.Key, err)
		}
		s.mu.Lock()
		s.Messages, s.LastConsolidated, s.UpdatedAt = all, lastConsolidated, now
		s.mu.Unlock()
		return nil
	})
}

// stamped returns copies of msgs, timestamped with now where they have no
// timestamp, or ErrInvalidMessage for a message that would not load back.
func stamped(msgs []providers.Message, now time.Time) ([]providers.Message, error) {
	stamp := formatTime(now)
	out := make([]providers.Message, len(msgs))
	for i, m := range msgs {
		if m.Role == "" {
			return nil, fmt.Errorf("message %d has no role: %w", i, ErrInvalidMessage)
		}
		m = cloneMessage(m)
		if m.Timestamp == "" {
			m.Timestamp = stamp
		}
		out[i] = m
	}
	return out, nil
}

// updateMeta persists a new cursor and metadata: one appended metadata
// line, or a compacting rewrite when enough have piled up.
func (f *FileStore) updateMeta(s *Session, cursor int, md map[string]any) error {
	now := f.now()
	meta := f.metaOf(s, cursor, md, now)
	var err error
	if s.file.exists && (!s.file.headerOK || s.file.metaLines >= f.compactAfter) {
		err = f.rewrite(s, s.Messages, meta)
	} else {
		var line []byte
		if line, err = appendMetaLine(nil, meta); err == nil {
			var rewrote bool
			if rewrote, err = f.appendOrRewrite(s, line, s.Messages, meta); err == nil && !rewrote {
				s.file.metaLines++
			}
		}
	}
	if err != nil {
		return fmt.Errorf("session: update metadata of %q: %w", s.Key, err)
	}
	s.mu.Lock()
	s.LastConsolidated, s.Metadata, s.UpdatedAt = cursor, md, now
	s.mu.Unlock()
	s.file.staleMeta = false
	return nil
}

func (f *FileStore) metaOf(s *Session, cursor int, md map[string]any, now time.Time) metaLine {
	return metaLine{
		Key: s.Key, CreatedAt: formatTime(s.CreatedAt), UpdatedAt: formatTime(now),
		LastConsolidated: cursor, Metadata: md,
	}
}

// appendOrRewrite appends lines to s's file, or writes the whole file (meta
// then all) when it does not exist yet, holds nothing valid, or vanished.
func (f *FileStore) appendOrRewrite(s *Session, lines []byte, all []providers.Message, meta metaLine) (rewrote bool, err error) {
	if s.file.exists && s.file.size > 0 {
		err := f.appendLines(s, lines)
		if !errors.Is(err, fs.ErrNotExist) {
			return false, err
		}
		f.log.Warn("session file vanished; writing it again", "session", s.Key)
	}
	return true, f.rewrite(s, all, meta)
}

// appendLines writes lines at the end of the valid part of s's file.
func (f *FileStore) appendLines(s *Session, lines []byte) (err error) {
	fh, err := os.OpenFile(f.path(s.file.stem), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			s.file.truncate = true // whatever part got written is garbage
		}
	}()
	if s.file.truncate {
		if err := fh.Truncate(s.file.size); err != nil {
			return err
		}
	}
	if s.file.needNewline {
		lines = append([]byte{'\n'}, lines...)
	}
	if _, err := fh.WriteAt(lines, s.file.size); err != nil {
		return err
	}
	if f.sync {
		if err := fh.Sync(); err != nil {
			return err
		}
	}
	s.file.size += int64(len(lines))
	s.file.truncate, s.file.needNewline = false, false
	return nil
}

// rewrite atomically replaces s's file with meta followed by msgs.
func (f *FileStore) rewrite(s *Session, msgs []providers.Message, meta metaLine) error {
	buf, err := appendMetaLine(nil, meta)
	if err != nil {
		return err
	}
	if buf, err = appendMessageLines(buf, msgs); err != nil {
		return err
	}
	if err := writeAtomic(f.dir, s.file.stem+fileExt, f.sync, f.wrapRewrite, buf); err != nil {
		return err
	}
	s.file.exists = true
	s.file.size = int64(len(buf))
	s.file.truncate, s.file.needNewline = false, false
	s.file.metaLines, s.file.headerOK, s.file.staleMeta = 1, true, false
	return nil
}

// Archive implements Store: the file is renamed to
// "<name>@<UTC time>.jsonl" (kept, never listed or loaded) and s becomes an
// empty session (no messages, cursor 0, no metadata) written to a new file.
func (f *FileStore) Archive(ctx context.Context, s *Session) error {
	return whileOwned(ctx, f, "archive", s, func(now time.Time) error {
		if s.file.exists {
			if err := f.archiveFile(s.file.stem, now); err != nil {
				return fmt.Errorf("session: archive %q: %w", s.Key, err)
			}
		}
		s.mu.Lock()
		s.CreatedAt, s.UpdatedAt = now, now
		s.LastConsolidated, s.Metadata, s.Messages = 0, map[string]any{}, nil
		s.mu.Unlock()
		s.file = fileState{stem: s.file.stem}
		if err := f.rewrite(s, nil, f.metaOf(s, 0, s.Metadata, now)); err != nil {
			// The old conversation is archived and s is empty; the file is
			// written on the next successful write.
			return fmt.Errorf("session: archive %q: start new file: %w", s.Key, err)
		}
		return nil
	})
}

func (f *FileStore) archiveFile(stem string, now time.Time) error {
	base := stem + archiveSep + now.UTC().Format("20060102T150405.000000000Z")
	name := base + fileExt
	for i := 1; ; i++ {
		if _, err := os.Lstat(filepath.Join(f.dir, name)); errors.Is(err, fs.ErrNotExist) {
			break
		}
		name = base + "-" + strconv.Itoa(i) + fileExt
	}
	if err := os.Rename(f.path(stem), filepath.Join(f.dir, name)); err != nil {
		return err
	}
	if f.sync {
		return syncDir(f.dir)
	}
	return nil
}

// writeMeta implements metaStore.
func (f *FileStore) writeMeta(_ context.Context, s *Session, cursor int, md map[string]any) error {
	return f.updateMeta(s, cursor, md)
}

func (f *FileStore) clock() time.Time { return f.now() }
func (f *FileStore) recent() *cache   { return f.cache }
