//go:build goolm

package matrix

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.mau.fi/util/dbutil"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto"
	"maunium.net/go/mautrix/crypto/cryptohelper"
	"maunium.net/go/mautrix/crypto/verificationhelper"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
	"maunium.net/go/mautrix/sqlstatestore"

	"github.com/nanobot-go/nanobot/channels"
	_ "modernc.org/sqlite" // the "sqlite" driver, pure Go
)

// The crypto store is mautrix's SQL store (plus its SQL room state store)
// in one SQLite file, matrix-crypto.db, on the pure-Go driver the binary
// already carries for WhatsApp. The alternative, mautrix's MemoryStore with
// a save callback, leaves serialising every Olm and Megolm session (with
// their pickles, message indexes and replay hashes) to us, after every
// change; the SQL store does that in transactions and is what mautrix's
// own bots run.

// Key waits of a message whose room key is missing: first without asking
// (the key is usually one sync behind the message), then after a key
// request to the sender's devices.
const (
	keyWaitShort = 3 * time.Second
	keyWaitLong  = 25 * time.Second
)

type olmCrypto struct {
	c      *Channel
	db     *dbutil.Database
	store  *crypto.SQLCryptoStore
	state  *sqlstatestore.SQLStateStore
	pickle []byte

	mu       sync.Mutex
	helper   *cryptohelper.CryptoHelper // nil until start succeeds
	verifier *sasVerifier               // nil without sasVerification
}

func openCrypto(c *Channel) (cryptoEngine, error) {
	c.cli.Log = cryptoLogger(c)
	dbPath, keyPath := cryptoFiles(c.stateDir)
	key, err := pickleKey(keyPath)
	if err != nil {
		return nil, err
	}
	// SQLite creates its journal files with the database's mode.
	f, err := os.OpenFile(dbPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("matrix: crypto store: %w", err)
	}
	f.Close()
	if err := os.Chmod(dbPath, 0o600); err != nil {
		return nil, fmt.Errorf("matrix: crypto store: %w", err)
	}
	raw, err := sql.Open("sqlite", "file:"+dbPath+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("matrix: crypto store %s: %w", dbPath, err)
	}
	db, err := dbutil.NewWithDB(raw, "sqlite3")
	if err != nil {
		raw.Close()
		return nil, fmt.Errorf("matrix: crypto store %s: %w", dbPath, err)
	}
	zl := c.cli.Log
	e := &olmCrypto{
		c: c, db: db, pickle: key,
		store: crypto.NewSQLCryptoStore(db, dbutil.ZeroLogger(zl), string(c.me), "", key),
		state: sqlstatestore.NewSQLStateStore(db, dbutil.ZeroLogger(zl), false),
	}
	ctx := context.Background()
	if err := e.state.Upgrade(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("matrix: crypto store %s: room state tables: %w", dbPath, err)
	}
	if err := e.store.DB.Upgrade(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("matrix: crypto store %s: %w", dbPath, err)
	}
	c.cli.StateStore = e.state
	c.cli.Crypto = cryptoGate{e}
	return e, nil
}

// cryptoGate is the client's CryptoHelper from the moment the store is
// open (before any send can look at it): it passes calls on to mautrix's
// helper once start has set that up, and refuses to encrypt before, so
// nothing goes into an encrypted room in plain text.
type cryptoGate struct{ e *olmCrypto }

var _ mautrix.CryptoHelper = cryptoGate{}

var errCryptoNotReady = errors.New("matrix: end-to-end encryption is not set up yet (the channel is connecting)")

func (g cryptoGate) current() *cryptohelper.CryptoHelper {
	g.e.mu.Lock()
	defer g.e.mu.Unlock()
	return g.e.helper
}

func (g cryptoGate) Encrypt(ctx context.Context, room id.RoomID, typ event.Type, content any) (*event.EncryptedEventContent, error) {
	h := g.current()
	if h == nil {
		return nil, errCryptoNotReady
	}
	return h.Encrypt(ctx, room, typ, content)
}

func (g cryptoGate) Decrypt(ctx context.Context, evt *event.Event) (*event.Event, error) {
	h := g.current()
	if h == nil {
		return nil, errCryptoNotReady
	}
	return h.Decrypt(ctx, evt)
}

func (g cryptoGate) WaitForSession(ctx context.Context, room id.RoomID, sender id.SenderKey, session id.SessionID, timeout time.Duration) bool {
	h := g.current()
	return h != nil && h.WaitForSession(ctx, room, sender, session, timeout)
}

func (g cryptoGate) RequestSession(ctx context.Context, room id.RoomID, sender id.SenderKey, session id.SessionID, user id.UserID, device id.DeviceID) {
	if h := g.current(); h != nil {
		h.RequestSession(ctx, room, sender, session, user, device)
	}
}

func (g cryptoGate) Init(context.Context) error { return nil }

func (e *olmCrypto) storedDevice(ctx context.Context) (id.DeviceID, error) {
	return e.store.FindDeviceID(ctx)
}

func (e *olmCrypto) start(ctx context.Context, in channels.Inbox) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	cli := e.c.cli
	stored, err := e.store.FindDeviceID(ctx)
	if err != nil {
		return fmt.Errorf("matrix: crypto store: %w", err)
	}
	if stored != "" && stored != cli.DeviceID {
		dbPath, _ := cryptoFiles(e.c.stateDir)
		return channels.Fatal(fmt.Errorf("matrix: the crypto store %s holds the keys of device %s, but the credentials are for device %s: use an access token of device %s (or deviceId %s with the password), or delete the store and matrix-crypto.key to start a new encryption identity", dbPath, stored, cli.DeviceID, stored, stored))
	}
	if e.helper != nil {
		return nil
	}
	e.store.DeviceID = cli.DeviceID
	helper, err := cryptohelper.NewCryptoHelper(cli, e.pickle, e.store)
	if err != nil {
		return fmt.Errorf("matrix: encryption: %w", err)
	}
	// Room messages are decrypted by the channel's own sync loop; the
	// helper's syncer hooks are never run.
	helper.DecryptErrorCallback = func(*event.Event, error) {}
	if err := helper.Init(ctx); err != nil {
		return fmt.Errorf("matrix: encryption: setting up the device keys: %w", err)
	}
	mach := helper.Machine()
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
	e.helper = helper
	e.c.log.Info("matrix: end-to-end encryption ready", "device", cli.DeviceID, "fingerprint", mach.Fingerprint())
	return nil
}

func (e *olmCrypto) machine() *crypto.OlmMachine {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.helper == nil {
		return nil
	}
	return e.helper.Machine()
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
			mautrix.UpdateStateStore(ctx, e.state, evt)
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
	device := content.DeviceID
	if device == "" {
		device = "*"
	}
	err := mach.SendRoomKeyRequest(ctx, evt.RoomID, content.SenderKey, content.SessionID, "", map[id.UserID][]id.DeviceID{
		evt.Sender: {device}, e.c.me: {"*"},
	})
	if err != nil {
		e.c.log.Warn("matrix: asking for a missing room key failed", "room", evt.RoomID, "err", e.c.redact(err.Error()))
	}
	return mach.WaitForSession(ctx, evt.RoomID, content.SenderKey, content.SessionID, keyWaitLong)
}

func (e *olmCrypto) prepare(ctx context.Context, room id.RoomID) error {
	enc, err := e.state.IsEncrypted(ctx, room)
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
	if e.helper != nil {
		if mach := e.helper.Machine(); mach != nil {
			_ = mach.FlushStore(context.Background())
		}
	}
	return e.db.Close()
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
		args = append(args, "err", w.c.redact(line.Error))
	}
	w.c.log.Warn("matrix: mautrix: "+line.Message, args...)
	return len(p), nil
}

// cryptoLogger is the zerolog logger the client and crypto machine use.
func cryptoLogger(c *Channel) zerolog.Logger {
	return zerolog.New(slogWriter{c}).Level(zerolog.WarnLevel)
}
