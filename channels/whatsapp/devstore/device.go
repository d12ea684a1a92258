package devstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mathrand "math/rand/v2"

	"github.com/google/uuid"
	"go.mau.fi/whatsmeow/proto/waAdv"
	"go.mau.fi/whatsmeow/store"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/util/keys"
	waLog "go.mau.fi/whatsmeow/util/log"
	"google.golang.org/protobuf/proto"
)

// Store is every store whatsmeow's Device needs, and their container.
var (
	_ store.DeviceContainer = (*Store)(nil)
	_ store.AllStores       = (*Store)(nil)
)

// ErrNoDeviceID is returned by PutDevice and DeleteDevice for a device that
// has not been paired (its JID is not known yet).
var ErrNoDeviceID = errors.New("whatsapp device store: the device has no JID yet (not paired)")

// deviceRecord is store.Device's persistent part.
type deviceRecord struct {
	ID, LID               string
	RegistrationID        uint32
	NoiseKey, IdentityKey [32]byte // private keys
	SignedPreKey          [32]byte
	SignedPreKeyID        uint32
	SignedPreKeySig       [64]byte
	AdvSecretKey          []byte
	Account               []byte // waAdv.ADVSignedDeviceIdentity, protobuf
	Platform              string
	BusinessName          string
	PushName              string
	LIDMigrationTimestamp int64
	FacebookUUID          [16]byte
}

// Device is the stored device, ready for whatsmeow.NewClient, or — before
// pairing — a new one with fresh keys, saved when pairing succeeds.
func (s *Store) Device() (*store.Device, error) {
	var rec *deviceRecord
	s.read(func() {
		if s.st.Device != nil {
			r := *s.st.Device
			rec = &r
		}
	})
	if rec == nil {
		return s.newDevice()
	}
	d, err := rec.device()
	if err != nil {
		return nil, fmt.Errorf("whatsapp device store %s: %w", s.path, err)
	}
	s.attach(d)
	return d, nil
}

func (s *Store) newDevice() (*store.Device, error) {
	adv := make([]byte, 32)
	if _, err := rand.Read(adv); err != nil {
		return nil, err
	}
	d := &store.Device{
		Log:            waLog.Noop,
		Container:      s,
		NoiseKey:       keys.NewKeyPair(),
		IdentityKey:    keys.NewKeyPair(),
		RegistrationID: mathrand.Uint32(),
		AdvSecretKey:   adv,
	}
	d.SignedPreKey = d.IdentityKey.CreateSignedPreKey(1)
	return d, nil
}

// attach points all of d's stores at s.
func (s *Store) attach(d *store.Device) {
	d.Log = waLog.Noop
	d.Identities, d.Sessions, d.PreKeys, d.SenderKeys = s, s, s, s
	d.AppStateKeys, d.AppState, d.Contacts, d.ChatSettings = s, s, s, s
	d.MsgSecrets, d.PrivacyTokens, d.EventBuffer, d.LIDs = s, s, s, s
	d.Container = s
	d.Initialized = true
}

func (r *deviceRecord) device() (*store.Device, error) {
	id, err := types.ParseJID(r.ID)
	if err != nil {
		return nil, fmt.Errorf("device id: %w", err)
	}
	var lid types.JID
	if r.LID != "" {
		if lid, err = types.ParseJID(r.LID); err != nil {
			return nil, fmt.Errorf("device lid: %w", err)
		}
	}
	var account waAdv.ADVSignedDeviceIdentity
	if err := proto.Unmarshal(r.Account, &account); err != nil {
		return nil, fmt.Errorf("device account: %w", err)
	}
	sig := r.SignedPreKeySig
	return &store.Device{
		NoiseKey:              keys.NewKeyPairFromPrivateKey(r.NoiseKey),
		IdentityKey:           keys.NewKeyPairFromPrivateKey(r.IdentityKey),
		SignedPreKey:          &keys.PreKey{KeyPair: *keys.NewKeyPairFromPrivateKey(r.SignedPreKey), KeyID: r.SignedPreKeyID, Signature: &sig},
		RegistrationID:        r.RegistrationID,
		AdvSecretKey:          r.AdvSecretKey,
		ID:                    &id,
		LID:                   lid,
		Account:               &account,
		Platform:              r.Platform,
		BusinessName:          r.BusinessName,
		PushName:              r.PushName,
		LIDMigrationTimestamp: r.LIDMigrationTimestamp,
		FacebookUUID:          uuid.UUID(r.FacebookUUID),
	}, nil
}

func record(d *store.Device) (*deviceRecord, error) {
	account, err := proto.Marshal(d.Account)
	if err != nil {
		return nil, fmt.Errorf("device account: %w", err)
	}
	r := &deviceRecord{
		ID:                    d.ID.String(),
		RegistrationID:        d.RegistrationID,
		NoiseKey:              *d.NoiseKey.Priv,
		IdentityKey:           *d.IdentityKey.Priv,
		SignedPreKey:          *d.SignedPreKey.Priv,
		SignedPreKeyID:        d.SignedPreKey.KeyID,
		AdvSecretKey:          append([]byte(nil), d.AdvSecretKey...),
		Account:               account,
		Platform:              d.Platform,
		BusinessName:          d.BusinessName,
		PushName:              d.PushName,
		LIDMigrationTimestamp: d.LIDMigrationTimestamp,
		FacebookUUID:          d.FacebookUUID,
	}
	if !d.LID.IsEmpty() {
		r.LID = d.LID.String()
	}
	if d.SignedPreKey.Signature != nil {
		r.SignedPreKeySig = *d.SignedPreKey.Signature
	}
	return r, nil
}

// PutDevice implements store.DeviceContainer (store.Device.Save): saved
// durably. A device with another JID than the stored one (a new pairing)
// starts with empty Signal and app state.
func (s *Store) PutDevice(ctx context.Context, d *store.Device) error {
	if d.ID == nil {
		return ErrNoDeviceID
	}
	rec, err := record(d)
	if err != nil {
		return fmt.Errorf("whatsapp device store: %w", err)
	}
	err = s.mutate(ctx, true, func(*txn) bool {
		if s.st.Device != nil && s.st.Device.ID != rec.ID {
			s.resetDevice()
		}
		s.st.Device = rec
		return true
	})
	if !d.Initialized {
		s.attach(d)
	}
	return err
}

// DeleteDevice implements store.DeviceContainer (store.Device.Delete, on
// logout): the device and everything that belongs to it go; the LID map
// stays.
func (s *Store) DeleteDevice(ctx context.Context, d *store.Device) error {
	if d.ID == nil {
		return ErrNoDeviceID
	}
	return s.mutate(ctx, true, func(*txn) bool {
		if s.st.Device == nil || s.st.Device.ID != d.ID.String() {
			return false
		}
		s.resetDevice()
		return true
	})
}

// resetDevice forgets the device and its state; the caller holds s.mu.
func (s *Store) resetDevice() {
	s.st.resetDevice()
	s.migrated = map[string]bool{}
}
