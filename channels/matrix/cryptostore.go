//go:build goolm

package matrix

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/nanobot-go/nanobot/internal/wal"
	"maunium.net/go/mautrix/crypto"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// cryptoStore is the OlmMachine's crypto.Store (and, through roomState,
// the client's room state store) kept in memory and written whole to one
// JSON file, matrix-crypto.json, with internal/atomicfile.
//
// Secret material (the Olm account, Olm and Megolm sessions, secrets) is
// kept in the file only as pickles encrypted with the pickle key. Each
// session is pickled when mautrix hands it over (Add/Put/Update), in the
// goroutine that just changed it, so a save never reads a live session
// another goroutine may be ratcheting.
//
// Save rule: whatever a restart must not roll back — the account, Olm
// sessions, inbound and outbound Megolm sessions, withheld markers,
// message indexes (replay protection, appended to their own journal,
// cryptoindex.go) and secrets — is written before the store method
// returns, so by the time a message is decrypted (and its
// sync position acknowledged) its state is on disk. Device lists,
// cross-signing keys and signatures, outdated users, shared-session
// markers, Olm message hashes and room state can be fetched or recomputed
// again; their changes are written at most saveDelay later (and at Flush
// and close).
//
// All methods are safe for concurrent use; one mutex guards everything,
// file writes included.
type cryptoStore struct {
	path string
	key  []byte
	log  *slog.Logger

	mu        sync.Mutex
	user      id.UserID
	device    id.DeviceID // the device the account belongs to
	account   *crypto.OlmAccount
	accountP  []byte // pickle of account
	olm       map[id.SenderKey][]*olmEntry
	inbound   map[id.RoomID]map[id.SessionID]*inboundEntry
	withheld  map[id.RoomID]map[id.SessionID]*event.RoomKeyWithheldEventContent
	outbound  map[id.RoomID]*outboundEntry
	shared    map[sharedMark]struct{}
	indices   map[indexKey]indexValue // and in journal
	journal   *wal.Log                // nil until load
	devices   map[id.UserID]map[id.DeviceID]id.Device
	crossKeys map[id.UserID]map[id.CrossSigningUsage]id.CrossSigningKey
	sigs      map[signatureKey]string
	outdated  map[id.UserID]struct{}
	secrets   map[id.Secret]string
	olmHashes map[[32]byte]time.Time
	rooms     *roomState

	dirty  bool
	timer  *time.Timer
	closed bool
}

var _ crypto.Store = (*cryptoStore)(nil)

// saveDelay bounds how long a change that may be lost (see the save rule)
// waits for company before it is written.
const saveDelay = 2 * time.Second

type olmEntry struct {
	s      *crypto.OlmSession
	pickle []byte
	times  crypto.ExpirationMixin
}

type inboundEntry struct {
	s      *crypto.InboundGroupSession
	pickle []byte
	meta   inboundMeta
}

type outboundEntry struct {
	s      *crypto.OutboundGroupSession
	pickle []byte
	meta   outboundMeta
}

type sharedMark struct {
	User     id.UserID
	Identity id.IdentityKey
	Session  id.SessionID
}

type indexKey struct {
	Session id.SessionID
	Index   uint
}

type indexValue struct {
	Event     id.EventID
	Timestamp int64
}

type signatureKey struct {
	SignedUser id.UserID
	SignedKey  id.Ed25519
	SignerUser id.UserID
	SignerKey  id.Ed25519
}

func newCryptoStore(path string, key []byte, user id.UserID, log *slog.Logger) *cryptoStore {
	s := &cryptoStore{
		path: path, key: key, log: log, user: user,
		olm:       map[id.SenderKey][]*olmEntry{},
		inbound:   map[id.RoomID]map[id.SessionID]*inboundEntry{},
		withheld:  map[id.RoomID]map[id.SessionID]*event.RoomKeyWithheldEventContent{},
		outbound:  map[id.RoomID]*outboundEntry{},
		shared:    map[sharedMark]struct{}{},
		indices:   map[indexKey]indexValue{},
		devices:   map[id.UserID]map[id.DeviceID]id.Device{},
		crossKeys: map[id.UserID]map[id.CrossSigningUsage]id.CrossSigningKey{},
		sigs:      map[signatureKey]string{},
		outdated:  map[id.UserID]struct{}{},
		secrets:   map[id.Secret]string{},
		olmHashes: map[[32]byte]time.Time{},
	}
	s.rooms = newRoomState(s)
	return s
}

// storedDevice is the device whose account the store holds ("" if none).
func (s *cryptoStore) storedDevice() id.DeviceID {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.accountP == nil {
		return ""
	}
	return s.device
}

// setDevice names the device a new account belongs to.
func (s *cryptoStore) setDevice(device id.DeviceID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.device = device
}

func (s *cryptoStore) Flush(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dirty {
		return nil
	}
	return s.saveLocked()
}

func (s *cryptoStore) PutAccount(_ context.Context, acc *crypto.OlmAccount) error {
	p, err := acc.Internal.Pickle(s.key)
	if err != nil {
		return fmt.Errorf("matrix: crypto store: pickling the account: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.account, s.accountP = acc, p
	return s.saveLocked()
}

func (s *cryptoStore) GetAccount(context.Context) (*crypto.OlmAccount, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.account, nil
}

func (s *cryptoStore) AddSession(ctx context.Context, key id.SenderKey, sess *crypto.OlmSession) error {
	return s.UpdateSession(ctx, key, sess)
}

func (s *cryptoStore) olmEntry(sess *crypto.OlmSession) (*olmEntry, error) {
	p, err := sess.Internal.Pickle(s.key)
	if err != nil {
		return nil, fmt.Errorf("matrix: crypto store: pickling an olm session: %w", err)
	}
	return &olmEntry{s: sess, pickle: p, times: sess.ExpirationMixin}, nil
}

// UpdateSession stores sess's new state (adding it when new).
func (s *cryptoStore) UpdateSession(ctx context.Context, key id.SenderKey, sess *crypto.OlmSession) error {
	e, err := s.olmEntry(sess)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.olm[key]
	i := slices.IndexFunc(list, func(o *olmEntry) bool { return o.s == sess })
	if i < 0 {
		s.olm[key] = append(list, e)
	} else {
		list[i] = e
	}
	return s.saveLocked()
}

func (s *cryptoStore) DeleteSession(ctx context.Context, key id.SenderKey, sess *crypto.OlmSession) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.olm[key] = slices.DeleteFunc(s.olm[key], func(o *olmEntry) bool { return o.s == sess })
	return s.saveLocked()
}

func (s *cryptoStore) HasSession(_ context.Context, key id.SenderKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.olm[key]) > 0
}

// GetSessions lists the sessions with key, the last decrypted from first.
func (s *cryptoStore) GetSessions(_ context.Context, key id.SenderKey) (crypto.OlmSessionList, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	entries := slices.Clone(s.olm[key])
	slices.SortStableFunc(entries, func(a, b *olmEntry) int {
		return b.times.LastDecryptedTime.Compare(a.times.LastDecryptedTime)
	})
	list := make(crypto.OlmSessionList, 0, len(entries))
	for _, e := range entries {
		list = append(list, e.s)
	}
	return list, nil
}

func (s *cryptoStore) GetLatestSession(ctx context.Context, key id.SenderKey) (*crypto.OlmSession, error) {
	list, _ := s.GetSessions(ctx, key)
	if len(list) == 0 {
		return nil, nil
	}
	return list[0], nil
}

// GetNewestSessionCreationTS is the creation time of the newest session
// with key that has been used (zero if none).
func (s *cryptoStore) GetNewestSessionCreationTS(_ context.Context, key id.SenderKey) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var newest time.Time
	for _, e := range s.olm[key] {
		t := e.times
		used := !t.LastEncryptedTime.Equal(t.CreationTime) || !t.LastDecryptedTime.Equal(t.CreationTime)
		if used && t.CreationTime.After(newest) {
			newest = t.CreationTime
		}
	}
	return newest, nil
}

func (s *cryptoStore) PutOlmHash(_ context.Context, hash [32]byte, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.olmHashes[hash] = at
	s.laterLocked()
	return nil
}

func (s *cryptoStore) GetOlmHash(_ context.Context, hash [32]byte) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.olmHashes[hash], nil
}

func (s *cryptoStore) DeleteOldOlmHashes(_ context.Context, before time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for h, at := range s.olmHashes {
		if at.Before(before) {
			delete(s.olmHashes, h)
			s.laterLocked()
		}
	}
	return nil
}

func (s *cryptoStore) inboundEntry(igs *crypto.InboundGroupSession) (*inboundEntry, error) {
	p, err := igs.Internal.Pickle(s.key)
	if err != nil {
		return nil, fmt.Errorf("matrix: crypto store: pickling a megolm session: %w", err)
	}
	return &inboundEntry{s: igs, pickle: p, meta: inboundMetaOf(igs)}, nil
}

// PutGroupSession stores an inbound Megolm session, replacing a withheld
// marker for it.
func (s *cryptoStore) PutGroupSession(_ context.Context, igs *crypto.InboundGroupSession) error {
	e, err := s.inboundEntry(igs)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	room := s.inbound[igs.RoomID]
	if room == nil {
		room = map[id.SessionID]*inboundEntry{}
		s.inbound[igs.RoomID] = room
	}
	room[e.meta.ID] = e
	delete(s.withheld[igs.RoomID], e.meta.ID)
	return s.saveLocked()
}

func (s *cryptoStore) GetGroupSession(_ context.Context, room id.RoomID, session id.SessionID) (*crypto.InboundGroupSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.inbound[room][session]; e != nil {
		return e.s, nil
	}
	if w := s.withheld[room][session]; w != nil {
		return nil, fmt.Errorf("%w (%s)", crypto.ErrGroupSessionWithheld, w.Code)
	}
	return nil, nil
}

func (s *cryptoStore) RedactGroupSession(_ context.Context, room id.RoomID, session id.SessionID, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inbound[room][session] == nil {
		return nil
	}
	delete(s.inbound[room], session)
	return s.saveLocked()
}

// RedactGroupSessions removes the sessions of a room and/or a sender,
// except those scheduled by a rotation policy (as mautrix's SQL store).
func (s *cryptoStore) RedactGroupSessions(_ context.Context, room id.RoomID, sender id.SenderKey, _ string) ([]id.SessionID, error) {
	if room == "" && sender == "" {
		return nil, fmt.Errorf("matrix: crypto store: redacting group sessions needs a room or a sender key")
	}
	return s.redactWhere(func(e *inboundEntry) bool {
		m := e.meta
		return (room == "" || m.RoomID == room) && (sender == "" || m.SenderKey == sender) && !m.IsScheduled && !m.ReceivedAt.IsZero()
	})
}

// RedactExpiredGroupSessions removes sessions received more than twice
// their maximum age ago.
func (s *cryptoStore) RedactExpiredGroupSessions(context.Context) ([]id.SessionID, error) {
	now := time.Now()
	return s.redactWhere(func(e *inboundEntry) bool {
		m := e.meta
		return !m.IsScheduled && !m.ReceivedAt.IsZero() && m.MaxAge > 0 &&
			m.ReceivedAt.Add(2*time.Duration(m.MaxAge)*time.Millisecond).Before(now)
	})
}

// RedactOutdatedGroupSessions removes sessions without a receive time.
func (s *cryptoStore) RedactOutdatedGroupSessions(context.Context) ([]id.SessionID, error) {
	return s.redactWhere(func(e *inboundEntry) bool { return e.meta.ReceivedAt.IsZero() })
}

func (s *cryptoStore) redactWhere(match func(*inboundEntry) bool) ([]id.SessionID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone []id.SessionID
	for _, room := range s.inbound {
		for sid, e := range room {
			if match(e) {
				gone = append(gone, sid)
				delete(room, sid)
			}
		}
	}
	if len(gone) == 0 {
		return nil, nil
	}
	return gone, s.saveLocked()
}

// PutWithheldGroupSession records a withheld session unless its key is
// already known.
func (s *cryptoStore) PutWithheldGroupSession(_ context.Context, content event.RoomKeyWithheldEventContent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inbound[content.RoomID][content.SessionID] != nil {
		return nil
	}
	room := s.withheld[content.RoomID]
	if room == nil {
		room = map[id.SessionID]*event.RoomKeyWithheldEventContent{}
		s.withheld[content.RoomID] = room
	}
	room[content.SessionID] = &content
	return s.saveLocked()
}

func (s *cryptoStore) GetWithheldGroupSession(_ context.Context, room id.RoomID, session id.SessionID) (*event.RoomKeyWithheldEventContent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.withheld[room][session], nil
}

func (s *cryptoStore) groupSessions(match func(*inboundEntry) bool) dbutil.RowIter[*crypto.InboundGroupSession] {
	s.mu.Lock()
	defer s.mu.Unlock()
	var list []*crypto.InboundGroupSession
	for _, room := range s.inbound {
		for _, e := range room {
			if match(e) {
				list = append(list, e.s)
			}
		}
	}
	return dbutil.NewSliceIter(list)
}

func (s *cryptoStore) GetGroupSessionsForRoom(_ context.Context, room id.RoomID) dbutil.RowIter[*crypto.InboundGroupSession] {
	return s.groupSessions(func(e *inboundEntry) bool { return e.meta.RoomID == room })
}

func (s *cryptoStore) GetAllGroupSessions(context.Context) dbutil.RowIter[*crypto.InboundGroupSession] {
	return s.groupSessions(func(*inboundEntry) bool { return true })
}

func (s *cryptoStore) GetGroupSessionsWithoutKeyBackupVersion(_ context.Context, v id.KeyBackupVersion) dbutil.RowIter[*crypto.InboundGroupSession] {
	return s.groupSessions(func(e *inboundEntry) bool { return e.meta.KeyBackupVersion != v })
}

func (s *cryptoStore) putOutbound(ogs *crypto.OutboundGroupSession) error {
	p, err := ogs.Internal.Pickle(s.key)
	if err != nil {
		return fmt.Errorf("matrix: crypto store: pickling an outbound megolm session: %w", err)
	}
	e := &outboundEntry{s: ogs, pickle: p, meta: outboundMetaOf(ogs)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outbound[ogs.RoomID] = e
	return s.saveLocked()
}

func (s *cryptoStore) AddOutboundGroupSession(_ context.Context, ogs *crypto.OutboundGroupSession) error {
	return s.putOutbound(ogs)
}

// UpdateOutboundGroupSession is called after every message encrypted with
// ogs: its ratchet moved on, and a restart must not reuse an index.
func (s *cryptoStore) UpdateOutboundGroupSession(_ context.Context, ogs *crypto.OutboundGroupSession) error {
	return s.putOutbound(ogs)
}

func (s *cryptoStore) GetOutboundGroupSession(_ context.Context, room id.RoomID) (*crypto.OutboundGroupSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.outbound[room]; e != nil {
		return e.s, nil
	}
	return nil, nil
}

func (s *cryptoStore) RemoveOutboundGroupSession(_ context.Context, room id.RoomID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.outbound[room] == nil {
		return nil
	}
	delete(s.outbound, room)
	return s.saveLocked()
}

func (s *cryptoStore) MarkOutboundGroupSessionShared(_ context.Context, user id.UserID, identity id.IdentityKey, session id.SessionID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shared[sharedMark{user, identity, session}] = struct{}{}
	s.laterLocked()
	return nil
}

func (s *cryptoStore) IsOutboundGroupSessionShared(_ context.Context, user id.UserID, identity id.IdentityKey, session id.SessionID) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.shared[sharedMark{user, identity, session}]
	return ok, nil
}

// ValidateMessageIndex remembers which event used each (session, index)
// and refuses another event at the same index: a replayed ciphertext.
func (s *cryptoStore) ValidateMessageIndex(_ context.Context, session id.SessionID, evt id.EventID, index uint, ts int64) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, v := indexKey{session, index}, indexValue{evt, ts}
	old, ok := s.indices[k]
	if ok {
		return old == v, nil
	}
	if evt == "" && ts == 0 {
		return true, nil
	}
	if err := s.appendIndexLocked(indexRecord{k, v}); err != nil {
		return false, err
	}
	s.indices[k] = v
	return true, nil
}
