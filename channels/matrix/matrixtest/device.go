//go:build goolm

package matrixtest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto"
	"maunium.net/go/mautrix/crypto/cryptohelper"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// Device is a user's end-to-end encryption capable client, as Element
// would be: its own Olm account (kept in memory), device keys uploaded to
// the homeserver, a sync loop in the background that takes in room keys
// and decrypts, and a record of the messages it saw. It is stopped when
// the test ends. Needs the goolm build tag, like the channel's encryption.
type Device struct {
	*User
	helper *cryptohelper.CryptoHelper

	mu   sync.Mutex
	seen []Received
}

// Received is a message a Device saw in a room.
type Received struct {
	Room    id.RoomID
	ID      id.EventID
	Sender  id.UserID
	Body    string
	Edit    bool // an m.replace; Body is the new text
	Relates *event.RelatesTo
	// Encrypted is true when the message arrived as m.room.encrypted and
	// this device decrypted it.
	Encrypted bool
	// URL is a plain attachment's; File an encrypted attachment's.
	URL  id.ContentURIString
	File *event.EncryptedFileInfo
}

// NewDevice gives u an encryption capable client and starts its sync.
func (s *Server) NewDevice(tb testing.TB, u *User) *Device {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := &Device{User: u}
	cli := u.Client
	cli.StateStore = mautrix.NewMemoryStateStore()
	helper, err := cryptohelper.NewCryptoHelper(cli, []byte("matrixtest device pickle key"), crypto.NewMemoryStore(nil))
	if err != nil {
		cancel()
		tb.Fatalf("matrixtest: device of %s: %v", u.ID, err)
	}
	if err := helper.Init(ctx); err != nil {
		cancel()
		tb.Fatalf("matrixtest: device keys of %s: %v", u.ID, err)
	}
	cli.Crypto = helper
	d.helper = helper
	syncer := cli.Syncer.(*mautrix.DefaultSyncer)
	syncer.OnEvent(cli.StateStoreSyncHandler)
	syncer.OnEventType(event.EventMessage, func(_ context.Context, evt *event.Event) {
		c := evt.Content.AsMessage()
		r := Received{Room: evt.RoomID, ID: evt.ID, Sender: evt.Sender, Body: c.Body, Relates: c.RelatesTo,
			Encrypted: evt.Mautrix.EventSource&event.SourceDecrypted != 0, URL: c.URL, File: c.File}
		if c.RelatesTo != nil && c.RelatesTo.Type == event.RelReplace && c.NewContent != nil {
			r.Edit, r.Body = true, c.NewContent.Body
		}
		d.mu.Lock()
		d.seen = append(d.seen, r)
		d.mu.Unlock()
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := cli.SyncWithContext(ctx); err != nil && ctx.Err() == nil {
				select { // the homeserver hiccuped: sync again shortly
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}()
	tb.Cleanup(func() { cancel(); <-done })
	return d
}

// CreateEncryptedDM creates a direct room with m.room.encryption set
// (Megolm) and invites peer.
func (d *Device) CreateEncryptedDM(tb testing.TB, peer id.UserID) id.RoomID {
	tb.Helper()
	resp, err := d.CreateRoom(context.Background(), &mautrix.ReqCreateRoom{
		Preset: "trusted_private_chat", IsDirect: true, Invite: []id.UserID{peer},
		InitialState: []*event.Event{{
			Type:    event.StateEncryption,
			Content: event.Content{Parsed: &event.EncryptionEventContent{Algorithm: id.AlgorithmMegolmV1}},
		}},
	})
	if err != nil {
		tb.Fatalf("matrixtest: create an encrypted room: %v", err)
	}
	return resp.RoomID
}

// WaitJoined waits until this device's sync has seen room as encrypted
// and member joined to it.
func (d *Device) WaitJoined(tb testing.TB, room id.RoomID, member id.UserID) {
	tb.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		enc, _ := d.StateStore.IsEncrypted(ctx, room)
		joined, _ := d.StateStore.GetRoomJoinedOrInvitedMembers(ctx, room)
		m, _ := d.StateStore.GetMember(ctx, room, member)
		if enc && slices.Contains(joined, member) && m != nil && m.Membership == event.MembershipJoin {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("matrixtest: %s did not see %s join encrypted room %s (encrypted %v)", d.ID, member, room, enc)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Say sends a text message into room; it is encrypted when the room is.
func (d *Device) Say(tb testing.TB, room id.RoomID, text string) id.EventID {
	tb.Helper()
	resp, err := d.SendMessageEvent(context.Background(), room, event.EventMessage, &event.MessageEventContent{MsgType: event.MsgText, Body: text})
	if err != nil {
		tb.Fatalf("matrixtest: %s says %q: %v", d.ID, text, err)
	}
	return resp.EventID
}

// Seen returns the messages this device saw so far, oldest first.
func (d *Device) Seen() []Received {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.seen)
}

// RawType reads an event as the homeserver stores it and returns its type
// ("m.room.encrypted" for an encrypted message).
func (d *Device) RawType(ctx context.Context, room id.RoomID, eid id.EventID) (string, error) {
	var raw struct {
		Type string `json:"type"`
	}
	url := d.BuildClientURL("v3", "rooms", room, "event", eid)
	if _, err := d.MakeRequest(ctx, "GET", url, nil, &raw); err != nil {
		return "", err
	}
	if raw.Type == "" {
		return "", errors.New("matrixtest: event without a type")
	}
	return raw.Type, nil
}
