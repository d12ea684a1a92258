//go:build goolm

package matrix

import (
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/nanobot-go/nanobot/channels/matrix/internal/lockedstate"
)

// roomState is the client's room state store: mautrix's MemoryStateStore
// made safe to share (lockedstate) with the part encryption needs —
// members, whether they were fetched, and the rooms' encryption events —
// saved in the crypto store's file. Its changes take the crypto store's
// mutex, so a save never reads a map while it changes; they are written at
// most saveDelay later (the members and encryption state are fetched again
// when missing).
type roomState struct {
	*lockedstate.Store
}

var _ mautrix.StateStore = (*roomState)(nil)

// roomsRecord is the part of roomState kept on disk.
type roomsRecord struct {
	Members        map[id.RoomID]map[id.UserID]*event.MemberEventContent `json:"members,omitempty"`
	MembersFetched map[id.RoomID]bool                                    `json:"membersFetched,omitempty"`
	Encryption     map[id.RoomID]*event.EncryptionEventContent           `json:"encryption,omitempty"`
}

func newRoomState(s *cryptoStore) *roomState {
	return &roomState{Store: lockedstate.New(&s.mu, s.laterLocked)}
}

// recordLocked is the on-disk part (the caller holds s.mu).
func (r *roomState) recordLocked() *roomsRecord {
	m := r.MemoryStateStore
	return &roomsRecord{Members: m.Members, MembersFetched: m.MembersFetched, Encryption: m.Encryption}
}

// restoreLocked takes the on-disk part back (the caller holds s.mu).
func (r *roomState) restoreLocked(rec *roomsRecord) {
	m := r.MemoryStateStore
	for room, members := range rec.Members {
		if members != nil {
			m.Members[room] = members
		}
	}
	for room, ok := range rec.MembersFetched {
		m.MembersFetched[room] = ok
	}
	for room, enc := range rec.Encryption {
		m.Encryption[room] = enc
	}
}
