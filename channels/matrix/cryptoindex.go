//go:build goolm

package matrix

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/nanobot-go/nanobot/internal/wal"
)

// The crypto store's message indexes (replay protection) grow by one per
// decrypted message and must be on disk before the message is handled;
// rewriting the whole store for each would cost more with every message
// seen. So they are appended to their own record file beside the store,
// matrix-crypto.indexes (internal/wal: one checksummed JSON line each,
// fsynced, a torn tail cut off at open). cryptoStore's mutex serialises
// its use.

func indexJournalPath(storePath string) string {
	return strings.TrimSuffix(storePath, ".json") + ".indexes"
}

// openIndexJournal reads the journal into idx and opens it for appends.
func openIndexJournal(path string, log *slog.Logger, idx map[indexKey]indexValue) (*wal.Log, error) {
	l, err := wal.Open(path, wal.Options{Log: log}, func(payload []byte) error {
		var r indexRecord
		if err := json.Unmarshal(payload, &r); err != nil {
			return err
		}
		idx[r.indexKey] = r.indexValue
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCryptoFile, err)
	}
	return l, nil
}

// appendIndexLocked writes one message index and syncs it.
func (s *cryptoStore) appendIndexLocked(r indexRecord) error {
	if s.journal == nil {
		return errors.New("matrix: crypto store: the index journal is not open")
	}
	if err := wal.AppendJSON(s.journal, r, true); err != nil {
		return fmt.Errorf("matrix: crypto store: %w", err)
	}
	return nil
}
