package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// List implements Store. Message counts are known for sessions in memory;
// others report the file's modification time and -1.
func (f *FileStore) List(ctx context.Context) ([]Info, error) {
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		return nil, fmt.Errorf("session: list: %w", err)
	}
	var out []Info
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		name := e.Name()
		stem, ok := strings.CutSuffix(name, fileExt)
		if !ok || !e.Type().IsRegular() || strings.HasPrefix(name, ".") || strings.Contains(stem, archiveSep) {
			continue
		}
		key, ok := decodeKey(stem)
		if !ok || !strings.Contains(stem, "%") {
			// Hashed long keys and Python nanobot names carry the key in
			// their metadata line.
			if m, err := readMetaLine(filepath.Join(f.dir, name)); err == nil && m.Key != "" {
				key, ok = m.Key, true
			}
		}
		if !ok {
			continue
		}
		info := Info{Key: key, Messages: -1}
		if s := f.cache.peek(key); s != nil {
			unlock := f.locks.lock(key)
			info.UpdatedAt, info.Messages = s.UpdatedAt, len(s.Messages)
			unlock()
		} else if fi, err := e.Info(); err == nil {
			info.UpdatedAt = fi.ModTime()
		}
		out = append(out, info)
	}
	return out, nil
}
