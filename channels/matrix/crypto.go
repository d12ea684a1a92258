//go:build goolm

package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto"
	"maunium.net/go/mautrix/crypto/verificationhelper"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/nanobot-go/nanobot/channels"
)

// The crypto store is cryptoStore (cryptostore.go): mautrix's OlmMachine
// state and the room state it needs, in memory and in one JSON file,
// matrix-crypto.json, with the secret parts pickled under the pickle key.
// It replaced mautrix's SQL store on SQLite, which cost the binary about
// 3.4 MiB and start-up 2.5 ms; mautrix's cryptohelper is not used either,
// since it links that store in.

// Key waits of a message whose room key is missing: first without asking
// (the key is usually one sync behind the message), then after a key
// request to the sender's devices.
const (
	keyWaitShort = 3 * time.Second
	keyWaitLong  = 25 * time.Second
)

type olmCrypto struct {
	c     *Channel
	store *cryptoStore

	mu       sync.Mutex
	mach     *crypto.OlmMachine // nil until start succeeds
	verifier *sasVerifier       // nil without sasVerification
}

func openCrypto(c *Channel) (cryptoEngine, error) {
	c.cli.Log = cryptoLogger(c)
	storePath, keyPath := cryptoFiles(c.stateDir)
	key, err := pickleKey(keyPath)
	if err != nil {
		return nil, err
	}
	fresh := !fileExists(storePath)
	store := newCryptoStore(storePath, key, c.me, c.log)
	if err := store.load(); err != nil {
		return nil, err
	}
	if old := legacyCryptoFile(c.stateDir); fresh && fileExists(old) {
		c.log.Warn("matrix: the SQLite crypto store of an older nanobot is no longer read: end-to-end encryption starts over with new device keys on a new device "+
			"(password login makes one by itself; with accessToken, create a new access token, i.e. a new session). "+
			"Messages encrypted before cannot be read by the new device. The old file is left untouched and can be deleted.",
			"old_store", old, "new_store", storePath)
	}
	e := &olmCrypto{c: c, store: store}
	c.cli.StateStore = store.rooms
	c.cli.Crypto = cryptoGate{e}
	return e, nil
}

// cryptoGate is the client's CryptoHelper from the moment the store is
// open (before any send can look at it): it passes calls on to the Olm
// machine once start has set that up, and refuses to encrypt before, so
// nothing goes into an encrypted room in plain text.
type cryptoGate struct{ e *olmCrypto }

var _ mautrix.CryptoHelper = cryptoGate{}

var errCryptoNotReady = errors.New("matrix: end-to-end encryption is not set up yet (the channel is connecting)")

// Encrypt encrypts for room, first sharing a new room key with the room's
// members when there is none (or it expired, or went to nobody yet).
func (g cryptoGate) Encrypt(ctx context.Context, room id.RoomID, typ event.Type, content any) (*event.EncryptedEventContent, error) {
	mach := g.e.machine()
	if mach == nil {
		return nil, errCryptoNotReady
	}
	enc, err := mach.EncryptMegolmEvent(ctx, room, typ, content)
	if !errors.Is(err, crypto.ErrSessionExpired) && !errors.Is(err, crypto.ErrNoGroupSession) && !errors.Is(err, crypto.ErrSessionNotShared) {
		return enc, err
	}
	members, err := g.e.store.rooms.GetRoomJoinedOrInvitedMembers(ctx, room)
	if err != nil {
		return nil, fmt.Errorf("matrix: members of %s: %w", room, err)
	}
	if err := mach.ShareGroupSession(ctx, room, members); err != nil {
		return nil, fmt.Errorf("matrix: sharing the room key of %s: %w", room, err)
	}
	return mach.EncryptMegolmEvent(ctx, room, typ, content)
}

func (g cryptoGate) Decrypt(ctx context.Context, evt *event.Event) (*event.Event, error) {
	mach := g.e.machine()
	if mach == nil {
		return nil, errCryptoNotReady
	}
	return mach.DecryptMegolmEvent(ctx, evt)
}

func (g cryptoGate) WaitForSession(ctx context.Context, room id.RoomID, sender id.SenderKey, session id.SessionID, timeout time.Duration) bool {
	mach := g.e.machine()
	return mach != nil && mach.WaitForSession(ctx, room, sender, session, timeout)
}

func (g cryptoGate) RequestSession(ctx context.Context, room id.RoomID, sender id.SenderKey, session id.SessionID, user id.UserID, device id.DeviceID) {
	mach := g.e.machine()
	if mach == nil {
		return
	}
	if device == "" {
		device = "*"
	}
	err := mach.SendRoomKeyRequest(ctx, room, sender, session, "", map[id.UserID][]id.DeviceID{user: {device}, g.e.c.me: {"*"}})
	if err != nil {
		g.e.c.log.Warn("matrix: asking for a missing room key failed", "room", room, "err", g.e.c.redact.Error(err))
	}
}

func (g cryptoGate) Init(context.Context) error { return nil }

func (e *olmCrypto) storedDevice(context.Context) (id.DeviceID, error) {
	return e.store.storedDevice(), nil
}

func (e *olmCrypto) start(ctx context.Context, in channels.Inbox) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	cli := e.c.cli
	if stored := e.store.storedDevice(); stored != "" && stored != cli.DeviceID {
		return channels.Fatal(fmt.Errorf("matrix: the crypto store %s holds the keys of device %s, but the credentials are for device %s: use an access token of device %s (or deviceId %s with the password), or delete the store and matrix-crypto.key to start a new encryption identity", e.store.path, stored, cli.DeviceID, stored, stored))
	}
	if e.mach != nil {
		return nil
	}
	e.store.setDevice(cli.DeviceID)
	log := cli.Log.With().Str("component", "crypto").Logger()
	mach := crypto.NewOlmMachine(cli, &log, e.store, e.store.rooms)
	if err := mach.Load(ctx); err != nil {
		return fmt.Errorf("matrix: encryption: loading the account: %w", err)
	}
	if err := e.publishKeys(ctx, mach); err != nil {
		return err
	}
	mach.SetBackgroundCtx(context.WithoutCancel(ctx))
	if e.c.cfg.SASVerification {
		v := &sasVerifier{c: e.c, in: in}
		v.vh = verificationhelper.NewVerificationHelper(cli, mach, nil, v, false, false, true)
		// Init registers the handlers on the client's syncer, which only
		// sync (below) feeds, with verification events alone.
		if err := v.vh.Init(ctx); err != nil {
			return fmt.Errorf("matrix: device verification: %w", err)
		}
		e.verifier = v
	}
	e.mach = mach
	e.c.log.Info("matrix: end-to-end encryption ready", "device", cli.DeviceID, "fingerprint", mach.Fingerprint())
	return nil
}

// publishKeys uploads the device keys when the homeserver has none for the
// device, and checks they are the store's when it has some. A device with
// keys on the server that the store does not hold (a store lost, or one
// of an older nanobot on SQLite) cannot be used: its keys cannot be
// replaced, so the error asks for a new device.
func (e *olmCrypto) publishKeys(ctx context.Context, mach *crypto.OlmMachine) error {
	cli := e.c.cli
	resp, err := cli.QueryKeys(ctx, &mautrix.ReqQueryKeys{DeviceKeys: map[id.UserID]mautrix.DeviceIDList{cli.UserID: {cli.DeviceID}}})
	if err != nil {
		return fmt.Errorf("matrix: encryption: looking up the device's keys: %w", err)
	}
	dev, ok := resp.DeviceKeys[cli.UserID][cli.DeviceID]
	shared := mach.GetAccount().Shared
	switch {
	case (!ok || len(dev.Keys) == 0) && !shared:
		if err := mach.ShareKeys(ctx, -1); err != nil {
			return fmt.Errorf("matrix: encryption: uploading the device keys: %w", err)
		}
		return nil
	case !ok || len(dev.Keys) == 0:
		return channels.Fatal(fmt.Errorf("matrix: encryption: the homeserver lost the keys of device %s that %s holds; use a new device (a new access token, or password login without deviceId) after moving %s and matrix-crypto.key away", cli.DeviceID, e.store.path, e.store.path))
	case !shared || dev.Keys.GetEd25519(cli.DeviceID) != mach.OwnIdentity().SigningKey:
		return channels.Fatal(fmt.Errorf("matrix: encryption: device %s already has encryption keys on the homeserver that %s does not hold (a crypto store lost, or the SQLite matrix-crypto.db of an older nanobot, which is no longer read); keys of a device cannot be replaced: use a new device (create a new access token, or log in with the password and no deviceId)", cli.DeviceID, e.store.path))
	}
	return nil
}

func (e *olmCrypto) machine() *crypto.OlmMachine {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.mach
}

func (e *olmCrypto) sync(ctx context.Context, resp *mautrix.RespSync, since string) {
	mach := e.machine()
	if mach == nil {
		return
	}
	update := func(roomID id.RoomID, evts []*event.Event) {
		for _, evt := range evts {
			if evt.StateKey == nil {
				continue
			}
			evt.RoomID = roomID
			if err := evt.Content.ParseRaw(evt.Type); err != nil && !errors.Is(err, event.ErrContentAlreadyParsed) {
				continue
			}
			mautrix.UpdateStateStore(ctx, e.store.rooms, evt)
			if evt.Type == event.StateMember {
				mach.HandleMemberEvent(ctx, evt)
			}
		}
	}
	for roomID, room := range resp.Rooms.Join {
		update(roomID, room.State.Events)
		update(roomID, room.Timeline.Events)
	}
	for roomID, room := range resp.Rooms.Leave {
		update(roomID, room.State.Events)
		update(roomID, room.Timeline.Events)
	}
	mach.ProcessSyncResponse(ctx, resp, since)
	// Verification requests and steps sent to the device (parsed by
	// ProcessSyncResponse).
	for _, evt := range resp.ToDevice.Events {
		if strings.HasPrefix(evt.Type.Type, "m.key.verification.") {
			e.verification(ctx, evt)
		}
	}
}

func (e *olmCrypto) verification(ctx context.Context, evt *event.Event) {
	e.mu.Lock()
	v := e.verifier
	e.mu.Unlock()
	if v == nil {
		e.c.log.Debug("matrix: a device verification event was ignored (sasVerification is off)", "sender", evt.Sender, "type", evt.Type.Type)
		return
	}
	if evt.RoomID != "" {
		// mautrix's verification helper (v0.29 to v0.33) cannot finish an
		// in-room verification: it keys a step by the step's own event id
		// instead of the request's, and even past that the SAS commitment
		// of in-room starts does not match. Say so instead of starting a
		// verification that fails half way.
		if evt.Type.Type == event.EventMessage.Type {
			e.c.log.Info("matrix: in-room device verification is not supported; verify the bot's device from its session list in your client (to-device verification)", "sender", evt.Sender, "room", evt.RoomID)
		}
		return
	}
	if err := evt.Content.ParseRaw(evt.Type); err != nil && !errors.Is(err, event.ErrContentAlreadyParsed) {
		e.c.log.Warn("matrix: a malformed verification event was skipped", "sender", evt.Sender, "type", evt.Type.Type, "err", err)
		return
	}
	e.c.cli.Syncer.(*mautrix.DefaultSyncer).Dispatch(ctx, evt)
}

func (e *olmCrypto) decrypt(ctx context.Context, evt *event.Event) (*event.Event, error) {
	mach := e.machine()
	if mach == nil {
		return nil, errors.New("matrix: encryption is not set up yet")
	}
	dec, err := mach.DecryptMegolmEvent(ctx, evt)
	if errors.Is(err, crypto.ErrNoSessionFound) {
		return nil, fmt.Errorf("%w: %w", errNoRoomKey, err)
	}
	return dec, err
}

func (e *olmCrypto) awaitKey(ctx context.Context, evt *event.Event) bool {
	mach := e.machine()
	if mach == nil {
		return false
	}
	content := evt.Content.AsEncrypted()
	if mach.WaitForSession(ctx, evt.RoomID, content.SenderKey, content.SessionID, keyWaitShort) {
		return true
	}
	if ctx.Err() != nil {
		return false
	}
	cryptoGate{e}.RequestSession(ctx, evt.RoomID, content.SenderKey, content.SessionID, evt.Sender, content.DeviceID)
	return mach.WaitForSession(ctx, evt.RoomID, content.SenderKey, content.SessionID, keyWaitLong)
}

func (e *olmCrypto) prepare(ctx context.Context, room id.RoomID) error {
	enc, err := e.store.rooms.IsEncrypted(ctx, room)
	if err != nil {
		return fmt.Errorf("matrix: room state of %s: %w", room, err)
	}
	if !enc {
		// A room joined before encryption was switched on has no state
		// in the store yet: ask the homeserver (the client records it).
		var content event.EncryptionEventContent
		err := e.c.cli.StateEvent(ctx, room, event.StateEncryption, "", &content)
		if errors.Is(err, mautrix.MNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("matrix: encryption state of %s: %w", room, err)
		}
	}
	// The members the room key is shared with.
	if _, err := e.c.cli.Members(ctx, room); err != nil {
		return fmt.Errorf("matrix: members of %s: %w", room, err)
	}
	return nil
}

func (e *olmCrypto) close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.store.close()
}

// slogWriter receives mautrix's zerolog lines (warnings and errors) and
// passes their message and error on to the channel's logger; the other
// fields (ids, keys' public parts) stay out.
type slogWriter struct{ c *Channel }

func (w slogWriter) Write(p []byte) (int, error) {
	var line struct {
		Level   string `json:"level"`
		Message string `json:"message"`
		Error   string `json:"error"`
	}
	if json.Unmarshal(p, &line) != nil || line.Message == "" {
		return len(p), nil
	}
	args := []any{"level", line.Level}
	if line.Error != "" {
		args = append(args, "err", w.c.redact.String(line.Error))
	}
	w.c.log.Warn("matrix: mautrix: "+line.Message, args...)
	return len(p), nil
}

// cryptoLogger is the zerolog logger the client and crypto machine use.
func cryptoLogger(c *Channel) zerolog.Logger {
	return zerolog.New(slogWriter{c}).Level(zerolog.WarnLevel)
}
