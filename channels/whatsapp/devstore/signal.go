package devstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/util/keys"
)

// userPrefix is what every Signal address of a user (all its devices)
// starts with: "<user>:".
func userPrefix(user string) string { return user + ":" }

// deletePrefixed deletes the keys of m starting with prefix and reports
// whether any was.
func deletePrefixed[V any](t *txn, m map[string]V, prefix string) bool {
	found := false
	for k := range m {
		if strings.HasPrefix(k, prefix) && del(t, m, k) {
			found = true
		}
	}
	return found
}

// PutIdentity implements store.IdentityStore.
func (s *Store) PutIdentity(ctx context.Context, address string, key [32]byte) error {
	return s.mutate(ctx, true, func(t *txn) bool {
		if old, ok := s.st.Identities[address]; ok && old == key {
			return false
		}
		set(t, s.st.Identities, address, key)
		return true
	})
}

// DeleteAllIdentities implements store.IdentityStore: every device of phone.
func (s *Store) DeleteAllIdentities(ctx context.Context, phone string) error {
	return s.mutate(ctx, true, func(t *txn) bool {
		return deletePrefixed(t, s.st.Identities, userPrefix(phone))
	})
}

// DeleteIdentity implements store.IdentityStore.
func (s *Store) DeleteIdentity(ctx context.Context, address string) error {
	return s.mutate(ctx, true, func(t *txn) bool { return del(t, s.st.Identities, address) })
}

// IsTrustedIdentity implements store.IdentityStore: trust on first use, then
// only the key seen first (whatsmeow saves it after a successful decrypt).
func (s *Store) IsTrustedIdentity(_ context.Context, address string, key [32]byte) (trusted bool, err error) {
	s.read(func() {
		known, ok := s.st.Identities[address]
		trusted = !ok || known == key
	})
	return trusted, nil
}

// GetSession implements store.SessionStore; nil when there is none.
func (s *Store) GetSession(_ context.Context, address string) (session []byte, err error) {
	s.read(func() { session = bytes.Clone(s.st.Sessions[address]) })
	return session, nil
}

// HasSession implements store.SessionStore.
func (s *Store) HasSession(_ context.Context, address string) (has bool, err error) {
	s.read(func() { _, has = s.st.Sessions[address] })
	return has, nil
}

// GetManySessions implements store.SessionStore: every address is in the
// result, with nil for those without a session.
func (s *Store) GetManySessions(_ context.Context, addresses []string) (map[string][]byte, error) {
	if len(addresses) == 0 {
		return nil, nil
	}
	out := make(map[string][]byte, len(addresses))
	s.read(func() {
		for _, a := range addresses {
			out[a] = bytes.Clone(s.st.Sessions[a])
		}
	})
	return out, nil
}

// PutSession implements store.SessionStore.
func (s *Store) PutSession(ctx context.Context, address string, session []byte) error {
	return s.PutManySessions(ctx, map[string][]byte{address: session})
}

// PutManySessions implements store.SessionStore, in one write.
func (s *Store) PutManySessions(ctx context.Context, sessions map[string][]byte) error {
	return s.mutate(ctx, true, func(t *txn) bool {
		for addr, sess := range sessions {
			set(t, s.st.Sessions, addr, bytes.Clone(sess))
		}
		return len(sessions) > 0
	})
}

// DeleteAllSessions implements store.SessionStore: every device of phone.
func (s *Store) DeleteAllSessions(ctx context.Context, phone string) error {
	return s.mutate(ctx, true, func(t *txn) bool {
		return deletePrefixed(t, s.st.Sessions, userPrefix(phone))
	})
}

// DeleteSession implements store.SessionStore.
func (s *Store) DeleteSession(ctx context.Context, address string) error {
	return s.mutate(ctx, true, func(t *txn) bool { return del(t, s.st.Sessions, address) })
}

// MigratePNToLID implements store.SessionStore: the sessions, identities
// and sender keys of pn's devices move to lid's (replacing what lid had),
// once per process for each pn.
func (s *Store) MigratePNToLID(ctx context.Context, pn, lid types.JID) error {
	from, to := pn.SignalAddressUser(), lid.SignalAddressUser()
	var sessions, identities, senderKeys int
	err := s.mutate(ctx, true, func(t *txn) bool {
		if s.migrated[from] {
			return false
		}
		s.migrated[from] = true
		sessions = movePrefixed(t, s.st.Sessions, userPrefix(from), userPrefix(to), nil)
		identities = movePrefixed(t, s.st.Identities, userPrefix(from), userPrefix(to), nil)
		senderKeys = movePrefixed(t, s.st.SenderKeys, userPrefix(from), userPrefix(to), senderOf)
		return sessions+identities+senderKeys > 0
	})
	if err == nil && sessions+identities+senderKeys > 0 {
		s.log.Info("whatsapp device store: moved Signal state from phone number to LID",
			"sessions", sessions, "identities", identities, "sender_keys", senderKeys)
	}
	return err
}

// movePrefixed renames the keys of m whose part (all of the key, or what
// part returns: its start offset) starts with from so that it starts with
// to, and returns how many moved.
func movePrefixed[V any](t *txn, m map[string]V, from, to string, part func(string) int) int {
	var moved []string
	for k := range m {
		at := 0
		if part != nil {
			at = part(k)
		}
		if strings.HasPrefix(k[at:], from) {
			moved = append(moved, k)
		}
	}
	slices.Sort(moved)
	for _, k := range moved {
		at := 0
		if part != nil {
			at = part(k)
		}
		v := m[k]
		del(t, m, k)
		set(t, m, k[:at]+to+k[at+len(from):], v)
	}
	return len(moved)
}

// senderKeyID keys SenderKeys; group ids contain no NUL.
func senderKeyID(group, user string) string { return group + "\x00" + user }

// senderOf is where the user part of a senderKeyID starts.
func senderOf(id string) int { return strings.IndexByte(id, 0) + 1 }

// PutSenderKey implements store.SenderKeyStore.
func (s *Store) PutSenderKey(ctx context.Context, group, user string, session []byte) error {
	return s.mutate(ctx, true, func(t *txn) bool {
		set(t, s.st.SenderKeys, senderKeyID(group, user), bytes.Clone(session))
		return true
	})
}

// GetSenderKey implements store.SenderKeyStore; nil when there is none.
func (s *Store) GetSenderKey(_ context.Context, group, user string) (key []byte, err error) {
	s.read(func() { key = bytes.Clone(s.st.SenderKeys[senderKeyID(group, user)]) })
	return key, nil
}

// GetOrGenPreKeys implements store.PreKeyStore: the count lowest
// not-yet-uploaded prekeys, topped up with new ones (saved, not marked
// uploaded).
func (s *Store) GetOrGenPreKeys(ctx context.Context, count uint32) ([]*keys.PreKey, error) {
	out := make([]*keys.PreKey, 0, count)
	err := s.mutate(ctx, true, func(t *txn) bool {
		var pending []uint32
		for id, k := range s.st.PreKeys {
			if !k.Uploaded {
				pending = append(pending, id)
			}
		}
		slices.Sort(pending)
		for _, id := range pending[:min(len(pending), int(count))] {
			out = append(out, preKey(id, s.st.PreKeys[id]))
		}
		for len(out) < int(count) {
			out = append(out, s.genPreKey(t, false))
		}
		return len(pending) < int(count)
	})
	if err != nil {
		return nil, fmt.Errorf("whatsapp device store: prekeys: %w", err)
	}
	return out, nil
}

// genPreKey makes and stores the next prekey; the caller holds s.mu.
func (s *Store) genPreKey(t *txn, uploaded bool) *keys.PreKey {
	key := keys.NewPreKey(s.st.NextPreKeyID)
	set(t, s.st.PreKeys, key.KeyID, preKeyRecord{Priv: *key.Priv, Uploaded: uploaded})
	s.st.NextPreKeyID++
	return key
}

func preKey(id uint32, r preKeyRecord) *keys.PreKey {
	return &keys.PreKey{KeyPair: *keys.NewKeyPairFromPrivateKey(r.Priv), KeyID: id}
}

// GenOnePreKey implements store.PreKeyStore: a new prekey, marked uploaded
// (whatsmeow hands it out directly).
func (s *Store) GenOnePreKey(ctx context.Context) (key *keys.PreKey, err error) {
	err = s.mutate(ctx, true, func(t *txn) bool {
		key = s.genPreKey(t, true)
		return true
	})
	return key, err
}

// GetPreKey implements store.PreKeyStore; nil when there is none.
func (s *Store) GetPreKey(_ context.Context, id uint32) (key *keys.PreKey, err error) {
	s.read(func() {
		if r, ok := s.st.PreKeys[id]; ok {
			key = preKey(id, r)
		}
	})
	return key, nil
}

// RemovePreKey implements store.PreKeyStore (a prekey is used once).
func (s *Store) RemovePreKey(ctx context.Context, id uint32) error {
	return s.mutate(ctx, true, func(t *txn) bool { return del(t, s.st.PreKeys, id) })
}

// MarkPreKeysAsUploaded implements store.PreKeyStore: every key up to upToID.
func (s *Store) MarkPreKeysAsUploaded(ctx context.Context, upToID uint32) error {
	return s.mutate(ctx, true, func(t *txn) bool {
		changed := false
		for id, r := range s.st.PreKeys {
			if id <= upToID && !r.Uploaded {
				r.Uploaded = true
				set(t, s.st.PreKeys, id, r)
				changed = true
			}
		}
		return changed
	})
}

// UploadedPreKeyCount implements store.PreKeyStore.
func (s *Store) UploadedPreKeyCount(context.Context) (n int, err error) {
	s.read(func() {
		for _, r := range s.st.PreKeys {
			if r.Uploaded {
				n++
			}
		}
	})
	return n, nil
}
