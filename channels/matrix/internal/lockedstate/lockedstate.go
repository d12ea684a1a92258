// Package lockedstate makes mautrix's MemoryStateStore safe to share
// between a sync loop and the goroutines that send: mautrix's own lock does
// not cover every read (GetRoomJoinedOrInvitedMembers ranges over a room's
// member map after letting go of it, and the reads hand out the maps and
// member structs that later changes edit in place).
//
// Concurrency: every change and every member read takes Mu; reads hand
// out copies. Changed, when set, runs after each change with Mu held.
package lockedstate

import (
	"context"
	"sync"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// Store is a MemoryStateStore whose member and encryption state are
// changed and read under Mu.
type Store struct {
	*mautrix.MemoryStateStore
	// Mu guards the store (the channel shares its crypto store's mutex,
	// so a save never reads a map while it changes).
	Mu sync.Locker
	// Changed runs after each change, with Mu held (nil: nothing).
	Changed func()
}

var _ mautrix.StateStore = (*Store)(nil)

// New returns an empty store guarded by mu.
func New(mu sync.Locker, changed func()) *Store {
	return &Store{MemoryStateStore: mautrix.NewMemoryStateStore().(*mautrix.MemoryStateStore), Mu: mu, Changed: changed}
}

// change runs fn under Mu, then Changed.
func (s *Store) change(fn func() error) error {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	err := fn()
	if s.Changed != nil {
		s.Changed()
	}
	return err
}

// SetMembership stores a changed copy of the member: mautrix's edits the
// stored struct in place, and that struct is the content of the member
// event it came from, which the crypto machine reads on the sync loop.
func (s *Store) SetMembership(ctx context.Context, room id.RoomID, user id.UserID, ms event.Membership) error {
	return s.change(func() error {
		next := event.MemberEventContent{Membership: ms}
		if cur, err := s.MemoryStateStore.TryGetMember(ctx, room, user); err == nil && cur != nil {
			next = *cur
			next.Membership = ms
		}
		return s.MemoryStateStore.SetMember(ctx, room, user, &next)
	})
}

func (s *Store) SetMember(ctx context.Context, room id.RoomID, user id.UserID, member *event.MemberEventContent) error {
	return s.change(func() error { return s.MemoryStateStore.SetMember(ctx, room, user, member) })
}

func (s *Store) ClearCachedMembers(ctx context.Context, room id.RoomID, ms ...event.Membership) error {
	return s.change(func() error { return s.MemoryStateStore.ClearCachedMembers(ctx, room, ms...) })
}

func (s *Store) ReplaceCachedMembers(ctx context.Context, room id.RoomID, evts []*event.Event, only ...event.Membership) error {
	return s.change(func() error { return s.MemoryStateStore.ReplaceCachedMembers(ctx, room, evts, only...) })
}

func (s *Store) MarkMembersFetched(ctx context.Context, room id.RoomID) error {
	return s.change(func() error { return s.MemoryStateStore.MarkMembersFetched(ctx, room) })
}

func (s *Store) SetEncryptionEvent(ctx context.Context, room id.RoomID, content *event.EncryptionEventContent) error {
	return s.change(func() error { return s.MemoryStateStore.SetEncryptionEvent(ctx, room, content) })
}

func (s *Store) GetRoomMembers(_ context.Context, room id.RoomID) (map[id.UserID]*event.MemberEventContent, error) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	members := make(map[id.UserID]*event.MemberEventContent, len(s.MemoryStateStore.Members[room]))
	for user, m := range s.MemoryStateStore.Members[room] {
		c := *m
		members[user] = &c
	}
	return members, nil
}

func (s *Store) GetAllMembers(ctx context.Context, room id.RoomID) (map[id.UserID]*event.MemberEventContent, error) {
	return s.GetRoomMembers(ctx, room)
}

func (s *Store) TryGetMember(_ context.Context, room id.RoomID, user id.UserID) (*event.MemberEventContent, error) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	m := s.MemoryStateStore.Members[room][user]
	if m == nil {
		return nil, nil
	}
	c := *m
	return &c, nil
}

func (s *Store) GetMember(ctx context.Context, room id.RoomID, user id.UserID) (*event.MemberEventContent, error) {
	m, err := s.TryGetMember(ctx, room, user)
	if m == nil && err == nil {
		m = &event.MemberEventContent{Membership: event.MembershipLeave}
	}
	return m, err
}

// GetRoomJoinedOrInvitedMembers lists who a room key goes to.
func (s *Store) GetRoomJoinedOrInvitedMembers(ctx context.Context, room id.RoomID) ([]id.UserID, error) {
	members, _ := s.GetRoomMembers(ctx, room)
	ids := make([]id.UserID, 0, len(members))
	for user, m := range members {
		if m.Membership == event.MembershipJoin || m.Membership == event.MembershipInvite {
			ids = append(ids, user)
		}
	}
	return ids, nil
}
