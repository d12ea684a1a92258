package session

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// StoredFile is one conversation file as Files lists it.
type StoredFile struct {
	// Name is the file's name in the store's folder.
	Name    string
	Size    int64
	ModTime time.Time
}

// Files lists the conversation files, current and archived, for readers
// that follow the store incrementally (memory_search's index). Safe to
// call while the store is in use.
func (f *FileStore) Files() ([]StoredFile, error) {
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		return nil, fmt.Errorf("session: files: %w", err)
	}
	var out []StoredFile
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), fileExt) || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if fi, err := e.Info(); err == nil {
			out = append(out, StoredFile{Name: e.Name(), Size: fi.Size(), ModTime: fi.ModTime()})
		}
	}
	return out, nil
}

// ReadFrom calls fn with the messages of file name from byte offset on, up
// to its last complete line, and returns the offset after that line.
// Entries carry the file's session key and archive mark also when offset
// is past the metadata line that names the key. Lines it cannot read are
// skipped, as Each skips them; a file gone since the listing reads as
// empty.
func (f *FileStore) ReadFrom(ctx context.Context, name string, offset int64, fn func(Entry) error) (int64, error) {
	path, err := f.storedPath(name)
	if err != nil {
		return offset, err
	}
	fh, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return offset, nil
	}
	if err != nil {
		return offset, err
	}
	defer fh.Close()
	stem := strings.TrimSuffix(name, fileExt)
	base, _, archived := strings.Cut(stem, archiveSep)
	key, ok := decodeKey(base)
	if !ok || offset > 0 {
		if meta, err := readMetaLine(path); err == nil && meta.Key != "" {
			key = meta.Key
		}
	}
	if _, err := fh.Seek(offset, io.SeekStart); err != nil {
		return offset, err
	}
	r := bufio.NewReaderSize(fh, 64<<10)
	pos := offset
	for {
		if err := ctx.Err(); err != nil {
			return pos, err
		}
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: gather it whole.
			long := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = r.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil {
			return pos, nil // io.EOF: what is left is not a whole line yet
		}
		pos += int64(len(line))
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 {
			continue
		}
		msg, meta, derr := decodeLine(trimmed)
		switch {
		case derr != nil:
			continue
		case meta != nil:
			if meta.Key != "" {
				key = meta.Key
			}
			continue
		}
		if err := fn(Entry{Key: key, Archived: archived, Message: msg}); err != nil {
			return pos, err
		}
	}
}

// tailBytes is how much of a file TailSum reads.
const tailBytes = 256

// TailSum returns a checksum of the up to 256 bytes of file name before
// offset: a reader that remembers it can tell a file that only grew since
// from one that was replaced or cut.
func (f *FileStore) TailSum(name string, offset int64) (uint64, error) {
	path, err := f.storedPath(name)
	if err != nil {
		return 0, err
	}
	fh, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer fh.Close()
	start := max(0, offset-tailBytes)
	buf := make([]byte, offset-start)
	if _, err := fh.ReadAt(buf, start); err != nil {
		return 0, err
	}
	h := fnv.New64a()
	_, _ = h.Write(buf)
	return h.Sum64(), nil
}

// storedPath is the path of a file Files listed, refusing names that are
// not one.
func (f *FileStore) storedPath(name string) (string, error) {
	if name == "" || name != filepath.Base(name) || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, fileExt) {
		return "", fmt.Errorf("session: %q is not a conversation file", name)
	}
	return filepath.Join(f.dir, name), nil
}
