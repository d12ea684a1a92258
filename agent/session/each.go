package session

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/nanobot-go/nanobot/providers"
)

// Entry is one stored message and the conversation it belongs to.
type Entry struct {
	// Key is the session key; Archived is set for a conversation put
	// aside by /new (its file carries the archive time).
	Key      string
	Archived bool
	Message  providers.Message
}

// Each calls fn with every stored message of every conversation, current
// and archived, newest file first, reading at most maxBytes of files
// (0: all). It reads the files as they are on disk (what a running turn
// has not saved yet is not there) and skips lines it cannot read. fn
// returning an error stops the walk with it. Safe to call while the store
// is in use: it takes no session's lock.
func (f *FileStore) Each(ctx context.Context, maxBytes int64, fn func(Entry) error) error {
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		return fmt.Errorf("session: each: %w", err)
	}
	type file struct {
		name string
		mod  int64
		size int64
	}
	var files []file
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), fileExt) || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if fi, err := e.Info(); err == nil {
			files = append(files, file{e.Name(), fi.ModTime().UnixNano(), fi.Size()})
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].mod > files[j].mod })
	var read int64
	for _, fl := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if maxBytes > 0 && read+fl.size > maxBytes && read > 0 {
			break
		}
		read += fl.size
		if err := f.eachIn(filepath.Join(f.dir, fl.name), fn); err != nil {
			return err
		}
	}
	return nil
}

// eachIn walks one session file.
func (f *FileStore) eachIn(path string, fn func(Entry) error) error {
	fh, err := os.Open(path)
	if err != nil {
		return nil // gone since the listing (archived, rewritten)
	}
	defer fh.Close()
	stem := strings.TrimSuffix(filepath.Base(path), fileExt)
	base, _, archived := strings.Cut(stem, archiveSep)
	key, _ := decodeKey(base)
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		msg, meta, err := decodeLine(line)
		switch {
		case err != nil:
			continue
		case meta != nil:
			if meta.Key != "" {
				key = meta.Key
			}
			continue
		}
		if err := fn(Entry{Key: key, Archived: archived, Message: msg}); err != nil {
			return err
		}
	}
	return nil
}
