//go:build goolm

package matrix

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// indexJournal keeps the crypto store's message indexes (replay
// protection). They grow by one per decrypted message and must be on disk
// before the message is handled; rewriting the whole store for each would
// cost more with every message seen. So they are appended to their own
// file beside the store, matrix-crypto.indexes, one JSON line each,
// synced per line. Not safe for concurrent use: cryptoStore's mutex
// guards it.
type indexJournal struct {
	path string
	f    *os.File // open from the first append
}

func newIndexJournal(storePath string) *indexJournal {
	return &indexJournal{path: strings.TrimSuffix(storePath, ".json") + ".indexes"}
}

// load reads the journal into idx. A last line a crash cut short is cut
// off the file, so the next line starts clean; any other bad line is an
// errCryptoFile.
func (j *indexJournal) load(idx map[indexKey]indexValue) error {
	b, err := os.ReadFile(j.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("matrix: crypto store: %w", err)
	}
	end := bytes.LastIndexByte(b, '\n') + 1
	for n, line := range bytes.Split(b[:end], []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		var r indexRecord
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("%w: %s line %d: %w", errCryptoFile, j.path, n+1, err)
		}
		idx[r.indexKey] = r.indexValue
	}
	if end < len(b) {
		if err := os.Truncate(j.path, int64(end)); err != nil {
			return fmt.Errorf("matrix: crypto store: cutting a torn line off %s: %w", j.path, err)
		}
	}
	return nil
}

// append writes r and syncs it; a failed write is cut off again.
func (j *indexJournal) append(r indexRecord) error {
	if j.f == nil {
		f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("matrix: crypto store: %w", err)
		}
		atomicfile.SyncDir(filepath.Dir(j.path))
		j.f = f
	}
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("matrix: crypto store: %w", err)
	}
	st, err := j.f.Stat()
	if err != nil {
		return fmt.Errorf("matrix: crypto store: %w", err)
	}
	if _, err := j.f.Write(append(line, '\n')); err != nil {
		_ = j.f.Truncate(st.Size())
		return fmt.Errorf("matrix: crypto store: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("matrix: crypto store: %w", err)
	}
	return nil
}

func (j *indexJournal) close() error {
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}
