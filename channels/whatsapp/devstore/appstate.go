package devstore

import (
	"bytes"
	"context"

	"go.mau.fi/whatsmeow/store"
)

// PutAppStateSyncKey implements store.AppStateSyncKeyStore: a key id
// already known is replaced only by a newer key.
func (s *Store) PutAppStateSyncKey(ctx context.Context, id []byte, key store.AppStateSyncKey) error {
	return s.mutate(ctx, true, func(t *txn) bool {
		if old, ok := s.st.AppStateSyncKeys[string(id)]; ok && key.Timestamp <= old.Timestamp {
			return false
		}
		key.Data, key.Fingerprint = bytes.Clone(key.Data), bytes.Clone(key.Fingerprint)
		set(t, s.st.AppStateSyncKeys, string(id), key)
		return true
	})
}

// GetAppStateSyncKey implements store.AppStateSyncKeyStore; nil when unknown.
func (s *Store) GetAppStateSyncKey(_ context.Context, id []byte) (key *store.AppStateSyncKey, err error) {
	s.read(func() {
		if k, ok := s.st.AppStateSyncKeys[string(id)]; ok {
			k.Data, k.Fingerprint = bytes.Clone(k.Data), bytes.Clone(k.Fingerprint)
			key = &k
		}
	})
	return key, nil
}

// GetLatestAppStateSyncKeyID implements store.AppStateSyncKeyStore: the id
// of the newest key (ties: the greatest id), nil when there is none.
func (s *Store) GetLatestAppStateSyncKeyID(context.Context) (id []byte, err error) {
	s.read(func() {
		var best string
		var bestTS int64
		found := false
		for k, v := range s.st.AppStateSyncKeys {
			if !found || v.Timestamp > bestTS || (v.Timestamp == bestTS && k > best) {
				best, bestTS, found = k, v.Timestamp, true
			}
		}
		if found {
			id = []byte(best)
		}
	})
	return id, nil
}

// PutAppStateVersion implements store.AppStateStore.
func (s *Store) PutAppStateVersion(ctx context.Context, name string, version uint64, hash [128]byte) error {
	return s.mutate(ctx, false, func(t *txn) bool {
		set(t, s.st.AppStateVersions, name, appStateVersion{Version: version, Hash: hash})
		return true
	})
}

// GetAppStateVersion implements store.AppStateStore: 0 and a zero hash for
// a collection never synced.
func (s *Store) GetAppStateVersion(_ context.Context, name string) (version uint64, hash [128]byte, err error) {
	s.read(func() {
		v := s.st.AppStateVersions[name]
		version, hash = v.Version, v.Hash
	})
	return version, hash, nil
}

// DeleteAppStateVersion implements store.AppStateStore; the collection's
// MACs go with it.
func (s *Store) DeleteAppStateVersion(ctx context.Context, name string) error {
	return s.mutate(ctx, false, func(t *txn) bool {
		had := del(t, s.st.AppStateVersions, name)
		return del(t, s.st.AppStateMACs, name) || had
	})
}

// PutAppStateMutationMACs implements store.AppStateStore. Only the value
// MAC of the highest version of an index is kept: it is the only one
// GetAppStateMutationMAC can return.
func (s *Store) PutAppStateMutationMACs(ctx context.Context, name string, version uint64, mutations []store.AppStateMutationMAC) error {
	if len(mutations) == 0 {
		return nil
	}
	return s.mutate(ctx, false, func(t *txn) bool {
		old := s.st.AppStateMACs[name]
		macs := make(map[string]mutationMAC, len(old)+len(mutations))
		for k, v := range old {
			macs[k] = v
		}
		for _, m := range mutations {
			if cur, ok := macs[string(m.IndexMAC)]; ok && cur.Version > version {
				continue
			}
			macs[string(m.IndexMAC)] = mutationMAC{Version: version, ValueMAC: bytes.Clone(m.ValueMAC)}
		}
		set(t, s.st.AppStateMACs, name, macs)
		return true
	})
}

// DeleteAppStateMutationMACs implements store.AppStateStore: every version
// of these indexes.
func (s *Store) DeleteAppStateMutationMACs(ctx context.Context, name string, indexMACs [][]byte) error {
	if len(indexMACs) == 0 {
		return nil
	}
	return s.mutate(ctx, false, func(t *txn) bool {
		old, ok := s.st.AppStateMACs[name]
		if !ok {
			return false
		}
		macs := make(map[string]mutationMAC, len(old))
		for k, v := range old {
			macs[k] = v
		}
		for _, idx := range indexMACs {
			delete(macs, string(idx))
		}
		set(t, s.st.AppStateMACs, name, macs)
		return len(macs) != len(old)
	})
}

// GetAppStateMutationMAC implements store.AppStateStore; nil when unknown.
func (s *Store) GetAppStateMutationMAC(_ context.Context, name string, indexMAC []byte) (valueMAC []byte, err error) {
	s.read(func() {
		if m, ok := s.st.AppStateMACs[name][string(indexMAC)]; ok {
			valueMAC = bytes.Clone(m.ValueMAC)
		}
	})
	return valueMAC, nil
}
