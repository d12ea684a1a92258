//go:build goolm

package matrix

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"maunium.net/go/mautrix/crypto"
	"maunium.net/go/mautrix/crypto/goolm/libolmpickle"
	"maunium.net/go/mautrix/crypto/olm"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// The on-disk form of cryptoStore: one JSON document, rewritten whole.
// Pickles are goolm's (libolm-compatible) pickles under the pickle key;
// secrets are pickled the same way. Nothing else in it is secret: public
// keys, ids, timestamps, room state.

const cryptoFileVersion = 1

type cryptoFile struct {
	Version  int                                                       `json:"version"`
	User     id.UserID                                                 `json:"user"`
	Device   id.DeviceID                                               `json:"device"`
	Account  *accountRecord                                            `json:"account,omitempty"`
	Olm      []olmRecord                                               `json:"olmSessions,omitempty"`
	Inbound  []inboundRecord                                           `json:"inboundSessions,omitempty"`
	Withheld []*event.RoomKeyWithheldEventContent                      `json:"withheld,omitempty"`
	Outbound []outboundRecord                                          `json:"outboundSessions,omitempty"`
	Shared   []sharedMark                                              `json:"shared,omitempty"`
	Devices  map[id.UserID]map[id.DeviceID]*id.Device                  `json:"devices,omitempty"`
	Cross    map[id.UserID]map[id.CrossSigningUsage]id.CrossSigningKey `json:"crossSigningKeys,omitempty"`
	Sigs     []signatureRecord                                         `json:"signatures,omitempty"`
	Outdated []id.UserID                                               `json:"outdatedUsers,omitempty"`
	Secrets  map[id.Secret][]byte                                      `json:"secrets,omitempty"`
	Hashes   map[string]time.Time                                      `json:"olmHashes,omitempty"`
	Rooms    *roomsRecord                                              `json:"rooms,omitempty"`
}

type accountRecord struct {
	Pickle           []byte              `json:"pickle"`
	Shared           bool                `json:"shared"`
	KeyBackupVersion id.KeyBackupVersion `json:"keyBackupVersion,omitempty"`
}

type olmRecord struct {
	SenderKey id.SenderKey `json:"senderKey"`
	Pickle    []byte       `json:"pickle"`
	crypto.ExpirationMixin
}

// inboundMeta is what mautrix keeps beside an inbound Megolm session.
type inboundMeta struct {
	ID               id.SessionID
	RoomID           id.RoomID
	SenderKey        id.SenderKey
	SigningKey       id.Ed25519
	ForwardingChains []string
	RatchetSafety    crypto.RatchetSafety
	ReceivedAt       time.Time
	MaxAge           int64
	MaxMessages      int
	IsScheduled      bool
	KeyBackupVersion id.KeyBackupVersion
	KeySource        id.KeySource
}

type inboundRecord struct {
	inboundMeta
	Pickle []byte `json:"pickle"`
}

// outboundMeta is what mautrix keeps beside an outbound Megolm session
// (who it was shared with is in the shared marks).
type outboundMeta struct {
	RoomID       id.RoomID `json:"room"`
	Shared       bool      `json:"shared"`
	MaxMessages  int       `json:"maxMessages"`
	MessageCount int       `json:"messageCount"`
	crypto.ExpirationMixin
}

type outboundRecord struct {
	outboundMeta
	Pickle []byte `json:"pickle"`
}

type indexRecord struct {
	indexKey
	indexValue
}

type signatureRecord struct {
	signatureKey
	Signature string `json:"signature"`
}

func inboundMetaOf(igs *crypto.InboundGroupSession) inboundMeta {
	return inboundMeta{
		ID: igs.ID(), RoomID: igs.RoomID, SenderKey: igs.SenderKey, SigningKey: igs.SigningKey,
		ForwardingChains: igs.ForwardingChains, RatchetSafety: igs.RatchetSafety,
		ReceivedAt: igs.ReceivedAt, MaxAge: igs.MaxAge, MaxMessages: igs.MaxMessages,
		IsScheduled: igs.IsScheduled, KeyBackupVersion: igs.KeyBackupVersion, KeySource: igs.KeySource,
	}
}

func outboundMetaOf(ogs *crypto.OutboundGroupSession) outboundMeta {
	return outboundMeta{
		RoomID: ogs.RoomID, Shared: ogs.Shared, MaxMessages: ogs.MaxMessages,
		MessageCount: ogs.MessageCount, ExpirationMixin: ogs.ExpirationMixin,
	}
}

// laterLocked marks a change that may wait (see the save rule on
// cryptoStore) and schedules its write.
func (s *cryptoStore) laterLocked() {
	s.dirty = true
	if s.timer == nil && !s.closed {
		s.timer = time.AfterFunc(saveDelay, s.saveLater)
	}
}

func (s *cryptoStore) saveLater() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timer = nil
	if !s.dirty || s.closed {
		return
	}
	if err := s.saveLocked(); err != nil {
		s.log.Warn("matrix: saving the crypto store failed (retried at the next change)", "err", err)
	}
}

// close writes what is pending and stops delayed saves (changes that
// must not be lost are still written when they happen).
func (s *cryptoStore) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	var err error
	if s.dirty {
		err = s.saveLocked()
	}
	s.closed = true
	if s.journal != nil {
		err = errors.Join(err, s.journal.Close())
	}
	return err
}

// saveLocked writes the whole store now (0600, atomic replace).
func (s *cryptoStore) saveLocked() error {
	f, err := s.snapshotLocked()
	if err != nil {
		return err
	}
	b, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("matrix: crypto store: %w", err)
	}
	if err := atomicfile.Write(s.path, b, 0o600); err != nil {
		return fmt.Errorf("matrix: crypto store: %w", err)
	}
	s.dirty = false
	return nil
}

func (s *cryptoStore) snapshotLocked() (*cryptoFile, error) {
	f := &cryptoFile{
		Version: cryptoFileVersion, User: s.user, Device: s.device,
		Devices: make(map[id.UserID]map[id.DeviceID]*id.Device, len(s.devices)),
		Cross:   s.crossKeys, Rooms: s.rooms.recordLocked(),
		Secrets: make(map[id.Secret][]byte, len(s.secrets)),
		Hashes:  make(map[string]time.Time, len(s.olmHashes)),
	}
	if s.accountP != nil {
		f.Account = &accountRecord{Pickle: s.accountP, Shared: s.account.Shared, KeyBackupVersion: s.account.KeyBackupVersion}
	}
	for key, list := range s.olm {
		for _, e := range list {
			f.Olm = append(f.Olm, olmRecord{SenderKey: key, Pickle: e.pickle, ExpirationMixin: e.times})
		}
	}
	for _, room := range s.inbound {
		for _, e := range room {
			f.Inbound = append(f.Inbound, inboundRecord{inboundMeta: e.meta, Pickle: e.pickle})
		}
	}
	for _, room := range s.withheld {
		for _, w := range room {
			f.Withheld = append(f.Withheld, w)
		}
	}
	for _, e := range s.outbound {
		f.Outbound = append(f.Outbound, outboundRecord{outboundMeta: e.meta, Pickle: e.pickle})
	}
	for user, devs := range s.devices {
		// Pointers: id.TrustState marshals as text only through one.
		f.Devices[user] = make(map[id.DeviceID]*id.Device, len(devs))
		for k, d := range devs {
			f.Devices[user][k] = &d
		}
	}
	for m := range s.shared {
		f.Shared = append(f.Shared, m)
	}
	for k, sig := range s.sigs {
		f.Sigs = append(f.Sigs, signatureRecord{k, sig})
	}
	for u := range s.outdated {
		f.Outdated = append(f.Outdated, u)
	}
	for h, at := range s.olmHashes {
		f.Hashes[hex.EncodeToString(h[:])] = at
	}
	for name, v := range s.secrets {
		p, err := libolmpickle.Pickle(s.key, []byte(v))
		if err != nil {
			return nil, fmt.Errorf("matrix: crypto store: pickling secret %s: %w", name, err)
		}
		f.Secrets[name] = p
	}
	return f, nil
}

// errCryptoFile: the store file cannot be read back (truncated, not JSON,
// or a pickle the key does not open).
var errCryptoFile = errors.New("matrix: crypto store is unreadable")

// load reads the store file and the index journal; a missing file is an
// empty store.
func (s *cryptoStore) load() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadFileLocked(); err != nil {
		return err
	}
	j, err := openIndexJournal(indexJournalPath(s.path), s.log, s.indices)
	if err != nil {
		return err
	}
	s.journal = j
	return nil
}

func (s *cryptoStore) loadFileLocked() error {
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("matrix: crypto store: %w", err)
	}
	var f cryptoFile
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("%w: %s: %w", errCryptoFile, s.path, err)
	}
	if f.Version != cryptoFileVersion {
		return fmt.Errorf("%w: %s: version %d, want %d", errCryptoFile, s.path, f.Version, cryptoFileVersion)
	}
	if f.User != "" && f.User != s.user {
		return fmt.Errorf("matrix: crypto store %s belongs to %s, not userId %s (move it away to start a new encryption identity)", s.path, f.User, s.user)
	}
	if err := s.restoreLocked(&f); err != nil {
		return fmt.Errorf("%w: %s: %w", errCryptoFile, s.path, err)
	}
	return nil
}

func (s *cryptoStore) restoreLocked(f *cryptoFile) error {
	s.device = f.Device
	if err := s.restoreSessionsLocked(f); err != nil {
		return err
	}
	for _, w := range f.Withheld {
		if s.withheld[w.RoomID] == nil {
			s.withheld[w.RoomID] = map[id.SessionID]*event.RoomKeyWithheldEventContent{}
		}
		s.withheld[w.RoomID][w.SessionID] = w
	}
	for _, m := range f.Shared {
		s.shared[m] = struct{}{}
	}
	for _, r := range f.Sigs {
		s.sigs[r.signatureKey] = r.Signature
	}
	for _, u := range f.Outdated {
		s.outdated[u] = struct{}{}
	}
	for user, devs := range f.Devices {
		s.devices[user] = make(map[id.DeviceID]id.Device, len(devs))
		for k, d := range devs {
			if d != nil {
				s.devices[user][k] = *d
			}
		}
	}
	if f.Cross != nil {
		s.crossKeys = f.Cross
	}
	for h, at := range f.Hashes {
		var k [32]byte
		if n, err := hex.Decode(k[:], []byte(h)); err != nil || n != 32 {
			return fmt.Errorf("olm hash %q is not 32 hex bytes", h)
		}
		s.olmHashes[k] = at
	}
	for name, p := range f.Secrets {
		v, err := libolmpickle.Unpickle(s.key, p)
		if err != nil {
			return fmt.Errorf("secret %s: %w", name, err)
		}
		s.secrets[name] = string(v)
	}
	if f.Rooms != nil {
		s.rooms.restoreLocked(f.Rooms)
	}
	return nil
}

// restoreSessionsLocked unpickles the account and the sessions; an error
// here usually means the pickle key is not the one they were made with.
func (s *cryptoStore) restoreSessionsLocked(f *cryptoFile) error {
	if a := f.Account; a != nil {
		acc := &crypto.OlmAccount{Internal: olm.NewBlankAccount(), Shared: a.Shared, KeyBackupVersion: a.KeyBackupVersion}
		if err := acc.Internal.Unpickle(a.Pickle, s.key); err != nil {
			return fmt.Errorf("account (is matrix-crypto.key the key it was made with?): %w", err)
		}
		s.account, s.accountP = acc, a.Pickle
	}
	for _, r := range f.Olm {
		sess := &crypto.OlmSession{Internal: olm.NewBlankSession(), ExpirationMixin: r.ExpirationMixin}
		if err := sess.Internal.Unpickle(r.Pickle, s.key); err != nil {
			return fmt.Errorf("olm session with %s: %w", r.SenderKey, err)
		}
		s.olm[r.SenderKey] = append(s.olm[r.SenderKey], &olmEntry{s: sess, pickle: r.Pickle, times: r.ExpirationMixin})
	}
	for _, r := range f.Inbound {
		igs := &crypto.InboundGroupSession{Internal: olm.NewBlankInboundGroupSession()}
		if err := igs.Internal.Unpickle(r.Pickle, s.key); err != nil {
			return fmt.Errorf("megolm session %s: %w", r.ID, err)
		}
		m := r.inboundMeta
		igs.RoomID, igs.SenderKey, igs.SigningKey = m.RoomID, m.SenderKey, m.SigningKey
		igs.ForwardingChains, igs.RatchetSafety, igs.ReceivedAt = m.ForwardingChains, m.RatchetSafety, m.ReceivedAt
		igs.MaxAge, igs.MaxMessages, igs.IsScheduled = m.MaxAge, m.MaxMessages, m.IsScheduled
		igs.KeyBackupVersion, igs.KeySource = m.KeyBackupVersion, m.KeySource
		if s.inbound[m.RoomID] == nil {
			s.inbound[m.RoomID] = map[id.SessionID]*inboundEntry{}
		}
		s.inbound[m.RoomID][m.ID] = &inboundEntry{s: igs, pickle: r.Pickle, meta: m}
	}
	for _, r := range f.Outbound {
		m := r.outboundMeta
		ogs := &crypto.OutboundGroupSession{
			Internal: olm.NewBlankOutboundGroupSession(), ExpirationMixin: m.ExpirationMixin,
			MaxMessages: m.MaxMessages, MessageCount: m.MessageCount, RoomID: m.RoomID, Shared: m.Shared,
			Users: map[crypto.UserDevice]crypto.OGSState{},
		}
		if err := ogs.Internal.Unpickle(r.Pickle, s.key); err != nil {
			return fmt.Errorf("outbound megolm session of %s: %w", m.RoomID, err)
		}
		s.outbound[m.RoomID] = &outboundEntry{s: ogs, pickle: r.Pickle, meta: m}
	}
	return nil
}
