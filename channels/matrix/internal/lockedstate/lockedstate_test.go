package lockedstate

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// TestSyncAndSendersAtOnce: a sync loop changing members while senders
// list them and read them (the race detector is the judge; mautrix's
// MemoryStateStore alone fails it), and Changed runs once per change.
func TestSyncAndSendersAtOnce(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	changes := 0
	s := New(&mu, func() { changes++ })
	const room = id.RoomID("!r:test")
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 200 {
			user := id.UserID(fmt.Sprintf("@u%d:test", i%20))
			_ = s.SetMember(ctx, room, user, &event.MemberEventContent{Membership: event.MembershipJoin})
			_ = s.SetMembership(ctx, room, user, event.MembershipInvite)
		}
	})
	for range 2 {
		wg.Go(func() {
			for range 200 {
				_, _ = s.GetRoomJoinedOrInvitedMembers(ctx, room)
				if m, _ := s.GetMember(ctx, room, "@u1:test"); m != nil {
					_ = m.Membership
				}
			}
		})
	}
	wg.Wait()
	members, _ := s.GetRoomJoinedOrInvitedMembers(ctx, room)
	if len(members) != 20 || !slices.Contains(members, id.UserID("@u1:test")) {
		t.Errorf("%d members, want 20", len(members))
	}
	mu.Lock()
	defer mu.Unlock()
	if changes != 400 {
		t.Errorf("Changed ran %d times, want 400", changes)
	}
}

// A membership change never edits the member struct it was given: that
// struct is a member event's content, which the sync loop's crypto
// machine reads while a send (CreateRoom) sets the membership.
func TestSetMembershipLeavesTheEventsContentAlone(t *testing.T) {
	s := New(&sync.Mutex{}, nil)
	ctx := context.Background()
	content := &event.MemberEventContent{Membership: event.MembershipInvite, Displayname: "Ann"}
	if err := s.SetMember(ctx, "!r", "@ann:x", content); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMembership(ctx, "!r", "@ann:x", event.MembershipJoin); err != nil {
		t.Fatal(err)
	}
	if content.Membership != event.MembershipInvite {
		t.Errorf("the event's content was edited: %q", content.Membership)
	}
	if m, _ := s.GetMember(ctx, "!r", "@ann:x"); m.Membership != event.MembershipJoin || m.Displayname != "Ann" {
		t.Errorf("stored member %+v, want joined Ann", m)
	}
}
