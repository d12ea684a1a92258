//go:build goolm

package matrix

import (
	"context"
	"maps"

	"maunium.net/go/mautrix/id"
)

// The device lists, cross-signing keys, signatures and secrets of
// cryptoStore. Devices are kept as values and handed out as copies, so a
// caller changing one (its trust) never races a save.

func (s *cryptoStore) GetDevices(_ context.Context, user id.UserID) (map[id.DeviceID]*id.Device, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	devs, ok := s.devices[user]
	if !ok {
		return nil, nil
	}
	out := make(map[id.DeviceID]*id.Device, len(devs))
	for k, d := range devs {
		out[k] = &d
	}
	return out, nil
}

func (s *cryptoStore) GetDevice(_ context.Context, user id.UserID, device id.DeviceID) (*id.Device, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.devices[user][device]
	if !ok {
		return nil, nil
	}
	return &d, nil
}

func (s *cryptoStore) PutDevice(_ context.Context, user id.UserID, device *id.Device) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.devices[user] == nil {
		s.devices[user] = map[id.DeviceID]id.Device{}
	}
	s.devices[user][device.DeviceID] = *device
	s.laterLocked()
	return nil
}

// PutDevices replaces user's device list; the user is then tracked (even
// with no devices) and no longer outdated.
func (s *cryptoStore) PutDevices(_ context.Context, user id.UserID, devices map[id.DeviceID]*id.Device) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	devs := make(map[id.DeviceID]id.Device, len(devices))
	for k, d := range devices {
		devs[k] = *d
	}
	s.devices[user] = devs
	delete(s.outdated, user)
	s.laterLocked()
	return nil
}

func (s *cryptoStore) FindDeviceByKey(_ context.Context, user id.UserID, key id.IdentityKey) (*id.Device, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.devices[user] {
		if d.IdentityKey == key {
			return &d, nil
		}
	}
	return nil, nil
}

func (s *cryptoStore) FilterTrackedUsers(_ context.Context, users []id.UserID) ([]id.UserID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var tracked []id.UserID
	for _, u := range users {
		if _, ok := s.devices[u]; ok {
			tracked = append(tracked, u)
		}
	}
	return tracked, nil
}

func (s *cryptoStore) MarkTrackedUsersOutdated(_ context.Context, users []id.UserID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range users {
		if _, ok := s.devices[u]; ok {
			s.outdated[u] = struct{}{}
			s.laterLocked()
		}
	}
	return nil
}

func (s *cryptoStore) GetOutdatedTrackedUsers(context.Context) ([]id.UserID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	users := make([]id.UserID, 0, len(s.outdated))
	for u := range s.outdated {
		users = append(users, u)
	}
	return users, nil
}

// PutCrossSigningKey records user's current key for usage; the first key
// ever seen for it is kept beside it.
func (s *cryptoStore) PutCrossSigningKey(_ context.Context, user id.UserID, usage id.CrossSigningUsage, key id.Ed25519) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := s.crossKeys[user]
	if keys == nil {
		keys = map[id.CrossSigningUsage]id.CrossSigningKey{}
		s.crossKeys[user] = keys
	}
	k, ok := keys[usage]
	if !ok {
		k.First = key
	}
	k.Key = key
	keys[usage] = k
	s.laterLocked()
	return nil
}

func (s *cryptoStore) GetCrossSigningKeys(_ context.Context, user id.UserID) (map[id.CrossSigningUsage]id.CrossSigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := maps.Clone(s.crossKeys[user])
	if out == nil {
		out = map[id.CrossSigningUsage]id.CrossSigningKey{}
	}
	return out, nil
}

func (s *cryptoStore) PutSignature(_ context.Context, signedUser id.UserID, signedKey id.Ed25519, signerUser id.UserID, signerKey id.Ed25519, sig string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sigs[signatureKey{signedUser, signedKey, signerUser, signerKey}] = sig
	s.laterLocked()
	return nil
}

func (s *cryptoStore) IsKeySignedBy(_ context.Context, user id.UserID, key id.Ed25519, signer id.UserID, signerKey id.Ed25519) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.sigs[signatureKey{user, key, signer, signerKey}]
	return ok, nil
}

func (s *cryptoStore) DropSignaturesByKey(_ context.Context, signer id.UserID, signerKey id.Ed25519) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for k := range s.sigs {
		if k.SignerUser == signer && k.SignerKey == signerKey {
			delete(s.sigs, k)
			n++
		}
	}
	if n > 0 {
		s.laterLocked()
	}
	return n, nil
}

func (s *cryptoStore) GetSignaturesForKeyBy(_ context.Context, user id.UserID, key id.Ed25519, signer id.UserID) (map[id.Ed25519]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[id.Ed25519]string{}
	for k, sig := range s.sigs {
		if k.SignedUser == user && k.SignedKey == key && k.SignerUser == signer {
			out[k.SignerKey] = sig
		}
	}
	return out, nil
}

func (s *cryptoStore) GetSecret(_ context.Context, name id.Secret) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.secrets[name], nil
}

func (s *cryptoStore) PutSecret(_ context.Context, name id.Secret, value string) error {
	return s.changeSecret(name, &value)
}

func (s *cryptoStore) DeleteSecret(_ context.Context, name id.Secret) error {
	return s.changeSecret(name, nil)
}

// changeSecret sets (value nil: removes) a secret and saves at once.
func (s *cryptoStore) changeSecret(name id.Secret, value *string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if value != nil {
		s.secrets[name] = *value
	} else if _, ok := s.secrets[name]; ok {
		delete(s.secrets, name)
	} else {
		return nil
	}
	return s.saveLocked()
}
