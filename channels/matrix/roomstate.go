//go:build goolm

package matrix

import (
	"context"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// roomState is the client's room state store: mautrix's MemoryStateStore
// with the part encryption needs — members, whether they were fetched, and
// the rooms' encryption events — saved in the crypto store's file. Its
// changes take the crypto store's mutex, so a save never reads a map while
// it changes; they are written at most saveDelay later (the members and
// encryption state are fetched again when missing).
type roomState struct {
	*mautrix.MemoryStateStore
	s *cryptoStore
}

var _ mautrix.StateStore = (*roomState)(nil)

// roomsRecord is the part of roomState kept on disk.
type roomsRecord struct {
	Members        map[id.RoomID]map[id.UserID]*event.MemberEventContent `json:"members,omitempty"`
	MembersFetched map[id.RoomID]bool                                    `json:"membersFetched,omitempty"`
	Encryption     map[id.RoomID]*event.EncryptionEventContent           `json:"encryption,omitempty"`
}

func newRoomState(s *cryptoStore) *roomState {
	return &roomState{MemoryStateStore: mautrix.NewMemoryStateStore().(*mautrix.MemoryStateStore), s: s}
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

// change runs a change of the in-memory store under the crypto store's
// mutex and schedules a save.
func (r *roomState) change(fn func() error) error {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	err := fn()
	r.s.laterLocked()
	return err
}

func (r *roomState) SetMembership(ctx context.Context, room id.RoomID, user id.UserID, ms event.Membership) error {
	return r.change(func() error { return r.MemoryStateStore.SetMembership(ctx, room, user, ms) })
}

func (r *roomState) SetMember(ctx context.Context, room id.RoomID, user id.UserID, member *event.MemberEventContent) error {
	return r.change(func() error { return r.MemoryStateStore.SetMember(ctx, room, user, member) })
}

func (r *roomState) ClearCachedMembers(ctx context.Context, room id.RoomID, ms ...event.Membership) error {
	return r.change(func() error { return r.MemoryStateStore.ClearCachedMembers(ctx, room, ms...) })
}

func (r *roomState) ReplaceCachedMembers(ctx context.Context, room id.RoomID, evts []*event.Event, only ...event.Membership) error {
	return r.change(func() error { return r.MemoryStateStore.ReplaceCachedMembers(ctx, room, evts, only...) })
}

func (r *roomState) MarkMembersFetched(ctx context.Context, room id.RoomID) error {
	return r.change(func() error { return r.MemoryStateStore.MarkMembersFetched(ctx, room) })
}

func (r *roomState) SetEncryptionEvent(ctx context.Context, room id.RoomID, content *event.EncryptionEventContent) error {
	return r.change(func() error { return r.MemoryStateStore.SetEncryptionEvent(ctx, room, content) })
}

// The reads below hand out copies, under the crypto store's mutex:
// mautrix's return its own maps and member structs, which SetMembership
// then changes in place while the caller reads them.

func (r *roomState) GetRoomMembers(_ context.Context, room id.RoomID) (map[id.UserID]*event.MemberEventContent, error) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	members := make(map[id.UserID]*event.MemberEventContent, len(r.MemoryStateStore.Members[room]))
	for user, m := range r.MemoryStateStore.Members[room] {
		c := *m
		members[user] = &c
	}
	return members, nil
}

func (r *roomState) GetAllMembers(ctx context.Context, room id.RoomID) (map[id.UserID]*event.MemberEventContent, error) {
	return r.GetRoomMembers(ctx, room)
}

func (r *roomState) TryGetMember(_ context.Context, room id.RoomID, user id.UserID) (*event.MemberEventContent, error) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	m := r.MemoryStateStore.Members[room][user]
	if m == nil {
		return nil, nil
	}
	c := *m
	return &c, nil
}

func (r *roomState) GetMember(ctx context.Context, room id.RoomID, user id.UserID) (*event.MemberEventContent, error) {
	m, err := r.TryGetMember(ctx, room, user)
	if m == nil && err == nil {
		m = &event.MemberEventContent{Membership: event.MembershipLeave}
	}
	return m, err
}

// GetRoomJoinedOrInvitedMembers lists who a room key goes to.
func (r *roomState) GetRoomJoinedOrInvitedMembers(ctx context.Context, room id.RoomID) ([]id.UserID, error) {
	members, _ := r.GetRoomMembers(ctx, room)
	ids := make([]id.UserID, 0, len(members))
	for user, m := range members {
		if m.Membership == event.MembershipJoin || m.Membership == event.MembershipInvite {
			ids = append(ids, user)
		}
	}
	return ids, nil
}
