package devstore

import (
	"context"
	"fmt"

	"go.mau.fi/whatsmeow/store"
	"go.mau.fi/whatsmeow/types"
)

// PutLIDMapping implements store.LIDStore: lid and pn map to each other,
// replacing any earlier partner of either.
func (s *Store) PutLIDMapping(ctx context.Context, lid, pn types.JID) error {
	return s.PutManyLIDMappings(ctx, []store.LIDMapping{{LID: lid, PN: pn}})
}

// PutManyLIDMappings implements store.LIDStore; invalid pairs (a LID that
// is not @lid, a number that is not @s.whatsapp.net) are skipped.
func (s *Store) PutManyLIDMappings(ctx context.Context, mappings []store.LIDMapping) error {
	var invalid []store.LIDMapping
	err := s.mutate(ctx, false, func(t *txn) bool {
		changed := false
		for _, m := range mappings {
			if m.LID.Server != types.HiddenUserServer || m.PN.Server != types.DefaultUserServer {
				invalid = append(invalid, m)
				continue
			}
			if s.pnToLID[m.PN.User] == m.LID.User {
				continue
			}
			if oldLID, ok := s.pnToLID[m.PN.User]; ok {
				del(t, s.st.LIDToPN, oldLID)
			}
			if oldPN, ok := s.st.LIDToPN[m.LID.User]; ok {
				delete(s.pnToLID, oldPN)
			}
			set(t, s.st.LIDToPN, m.LID.User, m.PN.User)
			s.pnToLID[m.PN.User] = m.LID.User
			changed = true
		}
		return changed
	})
	if err == nil && len(mappings) == 1 && len(invalid) == 1 {
		return fmt.Errorf("invalid PutLIDMapping call %s/%s", invalid[0].LID, invalid[0].PN)
	}
	return err
}

// GetPNForLID implements store.LIDStore: the phone-number JID (same
// device) of a LID, or the empty JID.
func (s *Store) GetPNForLID(_ context.Context, lid types.JID) (pn types.JID, err error) {
	if lid.Server != types.HiddenUserServer {
		return types.JID{}, fmt.Errorf("invalid GetPNForLID call with non-LID JID %s", lid)
	}
	s.read(func() { pn = s.alt(lid) })
	return pn, nil
}

// GetLIDForPN implements store.LIDStore: the LID (same device) of a
// phone-number JID, or the empty JID.
func (s *Store) GetLIDForPN(_ context.Context, pn types.JID) (lid types.JID, err error) {
	if pn.Server != types.DefaultUserServer {
		return types.JID{}, fmt.Errorf("invalid GetLIDForPN call with non-PN JID %s", pn)
	}
	s.read(func() { lid = s.alt(pn) })
	return lid, nil
}

// GetManyLIDsForPNs implements store.LIDStore: the known LIDs of these
// phone-number JIDs (others are left out).
func (s *Store) GetManyLIDsForPNs(_ context.Context, pns []types.JID) (map[types.JID]types.JID, error) {
	if len(pns) == 0 {
		return nil, nil
	}
	out := make(map[types.JID]types.JID, len(pns))
	s.read(func() {
		for _, pn := range pns {
			if pn.Server != types.DefaultUserServer {
				continue
			}
			if lid := s.alt(pn); !lid.IsEmpty() {
				out[pn] = lid
			}
		}
	})
	return out, nil
}

// alt is the other form (LID ↔ phone number) of jid, keeping its device,
// or the empty JID; the caller holds s.mu.
func (s *Store) alt(jid types.JID) types.JID {
	switch jid.Server {
	case types.HiddenUserServer:
		if pn, ok := s.st.LIDToPN[jid.User]; ok {
			return types.JID{User: pn, Device: jid.Device, Server: types.DefaultUserServer}
		}
	case types.DefaultUserServer:
		if lid, ok := s.pnToLID[jid.User]; ok {
			return types.JID{User: lid, Device: jid.Device, Server: types.HiddenUserServer}
		}
	}
	return types.JID{}
}

// bothForms is jid and, when known, its other form; the caller holds s.mu.
func (s *Store) bothForms(jid types.JID) []types.JID {
	if other := s.alt(jid); !other.IsEmpty() {
		return []types.JID{jid, other}
	}
	return []types.JID{jid}
}
