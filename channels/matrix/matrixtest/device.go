//go:build goolm

package matrixtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto"
	"maunium.net/go/mautrix/crypto/cryptohelper"
	"maunium.net/go/mautrix/crypto/verificationhelper"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/nanobot-go/nanobot/channels/matrix/internal/lockedstate"
)

// Device is a user's end-to-end encryption capable client, as Element
// would be: its own Olm account (kept in memory), device keys uploaded to
// the homeserver, a sync loop in the background that takes in room keys
// and decrypts, and a record of the messages it saw. It is stopped when
// the test ends. Needs the goolm build tag, like the channel's encryption.
type Device struct {
	*User
	helper *cryptohelper.CryptoHelper
	vh     *verificationhelper.VerificationHelper
	ctx    context.Context
	sas    chan sasResult

	mu    sync.Mutex
	seen  []Received
	shown SAS
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
	// The sync loop writes the state while the test's goroutine sends
	// (which reads the members to share a room key with) and waits on it.
	cli.StateStore = lockedstate.New(&sync.Mutex{}, nil)
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
	d.helper, d.ctx, d.sas = helper, ctx, make(chan sasResult, 4)
	d.vh = verificationhelper.NewVerificationHelper(cli, helper.Machine(), nil, (*deviceVerifier)(d), false, false, true)
	if err := d.vh.Init(ctx); err != nil {
		cancel()
		tb.Fatalf("matrixtest: verification of %s: %v", u.ID, err)
	}
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
	start := time.Now()
	url := d.BuildClientURL("v3", "rooms", room, "event", eid)
	// Dendrite can answer 404 for an event it accepted a moment ago (its
	// room server stores it asynchronously): ask again for a while.
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		_, err := d.MakeRequest(ctx, "GET", url, nil, &raw)
		if err == nil {
			break
		}
		if !errors.Is(err, mautrix.MNotFound) || time.Since(start) > 10*time.Second {
			return "", err
		}
		select {
		case <-ctx.Done():
			return "", err
		case <-time.After(wait):
		}
	}
	if raw.Type == "" {
		return "", errors.New("matrixtest: event without a type")
	}
	return raw.Type, nil
}

// SAS is what a finished interactive verification showed and how it ended.
type SAS struct {
	Emoji    []rune
	Decimals []int
}

type sasResult struct {
	sas SAS
	err error
}

// deviceVerifier is the Device's side of interactive verification: it
// starts the emoji comparison once the other device is ready and confirms
// what it shows (the test compares it with the bot's log).
type deviceVerifier Device

func (v *deviceVerifier) VerificationRequested(context.Context, id.VerificationTransactionID, id.UserID, id.DeviceID) {
}

func (v *deviceVerifier) VerificationReady(ctx context.Context, txn id.VerificationTransactionID, _ id.DeviceID, _, _ bool, _ *verificationhelper.QRCode) {
	go func() {
		if err := v.vh.StartSAS(v.ctx, txn); err != nil {
			v.sas <- sasResult{err: fmt.Errorf("start SAS: %w", err)}
		}
	}()
}

func (v *deviceVerifier) ShowSAS(ctx context.Context, txn id.VerificationTransactionID, emojis []rune, _ []string, decimals []int) {
	v.mu.Lock()
	v.shown = SAS{Emoji: emojis, Decimals: decimals}
	v.mu.Unlock()
	go func() {
		if err := v.vh.ConfirmSAS(v.ctx, txn); err != nil {
			v.sas <- sasResult{err: fmt.Errorf("confirm SAS: %w", err)}
		}
	}()
}

func (v *deviceVerifier) VerificationCancelled(_ context.Context, _ id.VerificationTransactionID, code event.VerificationCancelCode, reason string) {
	v.sas <- sasResult{err: fmt.Errorf("verification cancelled: %s: %s", code, reason)}
}

func (v *deviceVerifier) VerificationDone(context.Context, id.VerificationTransactionID, event.VerificationMethod) {
	v.mu.Lock()
	shown := v.shown
	v.mu.Unlock()
	v.sas <- sasResult{sas: shown}
}

// Verify asks peer's devices to verify this one by emoji (to-device
// messages) and waits for the end: what was shown, or why it failed.
func (d *Device) Verify(tb testing.TB, peer id.UserID) (SAS, error) {
	tb.Helper()
	sas, err := d.verifyOnce(peer)
	if err != nil && strings.Contains(err.Error(), "got done event for transaction that is not in") {
		// mautrix's helper on this side confirms the emoji (ConfirmSAS, run
		// off its sync loop as it must be) and records the new state only
		// after its MAC was sent; when the peer confirms at once (the bot
		// does) its MAC and "done" can be handled in that window and the
		// helper cancels. A person confirms seconds later, so this is the
		// test device's race, not the bot's: try once more.
		tb.Logf("matrixtest: verification hit the helper's confirm race (%v); trying again", err)
		sas, err = d.verifyOnce(peer)
	}
	return sas, err
}

func (d *Device) verifyOnce(peer id.UserID) (SAS, error) {
	if _, err := d.vh.StartVerification(d.ctx, peer); err != nil {
		return SAS{}, err
	}
	select {
	case r := <-d.sas:
		return r.sas, r.err
	case <-time.After(30 * time.Second):
		return SAS{}, errors.New("matrixtest: verification did not finish in 30 s")
	}
}

// DeviceTrust is how this device regards another device.
func (d *Device) DeviceTrust(ctx context.Context, user id.UserID, device id.DeviceID) (id.TrustState, error) {
	dev, err := d.helper.Machine().CryptoStore.GetDevice(ctx, user, device)
	if err != nil || dev == nil {
		return 0, fmt.Errorf("matrixtest: device %s of %s unknown: %v", device, user, err)
	}
	return dev.Trust, nil
}
