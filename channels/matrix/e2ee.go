package matrix

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// cryptoEngine is the bot's end-to-end encryption: the Olm account of its
// device, the Megolm sessions of its rooms and the room state encryption
// needs. crypto.go implements it on mautrix's crypto (goolm build tag);
// without the tag there is none (crypto_off.go).
type cryptoEngine interface {
	// storedDevice is the device the store holds keys for ("" when new).
	storedDevice(ctx context.Context) (id.DeviceID, error)
	// start loads (or creates) the device's keys and uploads them when
	// the homeserver lacks them; from then on the client encrypts what it
	// sends into encrypted rooms. Called after every login; idempotent.
	start(ctx context.Context, in channels.Inbox) error
	// sync feeds one sync batch's room state, to-device messages (room
	// keys), device list changes and one-time key counts, before the
	// batch's room events are handled.
	sync(ctx context.Context, resp *mautrix.RespSync, since string)
	// decrypt decrypts an m.room.encrypted event; errors.Is(err,
	// errNoRoomKey) when its room key has not arrived (yet).
	decrypt(ctx context.Context, evt *event.Event) (*event.Event, error)
	// awaitKey waits a bounded time for evt's room key, asking the
	// sender's devices (and the bot's own) for it, and reports whether it
	// arrived.
	awaitKey(ctx context.Context, evt *event.Event) bool
	// prepare makes sure the room's encryption state and members are
	// known before the first message is sent into it by this process.
	prepare(ctx context.Context, room id.RoomID) error
	// verification takes a device verification event (a request in a
	// room, an m.key.verification.* step), for sasVerification.
	verification(ctx context.Context, evt *event.Event)
	close() error
}

// errNoRoomKey: the Megolm session of an encrypted event is not known.
var errNoRoomKey = errors.New("matrix: the room key of the message has not arrived")

// errNoCrypto: this binary was built without end-to-end encryption.
var errNoCrypto = errors.New("matrix: this nanobot binary was built without end-to-end encryption (go build -tags goolm); encrypted rooms are not read")

// cryptoFiles are the crypto store and its pickle key in the state folder.
func cryptoFiles(stateDir string) (store, key string) {
	return filepath.Join(stateDir, "matrix-crypto.json"), filepath.Join(stateDir, "matrix-crypto.key")
}

// legacyCryptoFile is the SQLite crypto store of nanobot before
// matrix-crypto.json; it is no longer read (and never touched).
func legacyCryptoFile(stateDir string) string {
	return filepath.Join(stateDir, "matrix-crypto.db")
}

// pickleKey returns the key that encrypts the Olm and Megolm state inside
// the store: 32 random bytes made at the first start of the instance and
// kept beside the store (0600). It is never logged.
func pickleKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if len(b) != 32 {
			return nil, fmt.Errorf("matrix: crypto key %s: %d bytes, want 32 (restore it from a backup, or delete it with matrix-crypto.json to start a new encryption identity)", path, len(b))
		}
		return b, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("matrix: crypto key: %w", err)
	}
	if store, _ := cryptoFiles(filepath.Dir(path)); fileExists(store) {
		return nil, fmt.Errorf("matrix: crypto key %s is missing but its store %s exists (restore the key, or delete the store to start a new encryption identity)", path, store)
	}
	b = make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("matrix: crypto key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("matrix: crypto key: %w", err)
	}
	if err := atomicfile.Write(path, b, 0o600); err != nil {
		return nil, fmt.Errorf("matrix: crypto key: %w", err)
	}
	return b, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// openEncryption opens the crypto store when e2eeEnabled is set (no
// network). A binary without encryption logs that and runs without it.
func (c *Channel) openEncryption() error {
	if !c.cfg.e2ee() || c.engine() != nil {
		return nil
	}
	if c.stateDir == "" {
		return channels.Fatal(errors.New("matrix: e2eeEnabled needs the instance's state folder for the crypto store"))
	}
	eng, err := openCrypto(c)
	if errors.Is(err, errNoCrypto) {
		c.log.Warn(err.Error())
		return nil
	}
	if err != nil {
		return channels.Fatal(err)
	}
	c.mu.Lock()
	c.crypto = eng
	c.mu.Unlock()
	return nil
}

// engine is the encryption of the running channel, or nil.
func (c *Channel) engine() cryptoEngine {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.crypto
}

// handleEncrypted decrypts an m.room.encrypted event and handles the
// message inside. A message whose room key is late is handled by a
// goroutine once the key arrives (Run waits for it), if awaitLateKey lets
// it wait; one that cannot be decrypted is logged and skipped.
func (c *Channel) handleEncrypted(ctx context.Context, in channels.Inbox, evt *event.Event) {
	log := c.log.With("room", evt.RoomID, "event", evt.ID, "sender", evt.Sender)
	eng := c.engine()
	if eng == nil {
		c.mu.Lock()
		first := !c.plainWarned[evt.RoomID]
		c.plainWarned[evt.RoomID] = true
		c.mu.Unlock()
		if first {
			log.Warn("matrix: an encrypted message cannot be read: end-to-end encryption is off (channels.matrix.e2eeEnabled)")
		}
		return
	}
	if err := evt.Content.ParseRaw(evt.Type); err != nil && !errors.Is(err, event.ErrContentAlreadyParsed) {
		log.Warn("matrix: malformed encrypted event skipped", "err", err)
		return
	}
	dec, err := eng.decrypt(ctx, evt)
	if errors.Is(err, errNoRoomKey) {
		c.awaitLateKey(ctx, in, eng, evt, log)
		return
	}
	if err != nil {
		log.Warn("matrix: an encrypted message could not be decrypted and was skipped", "err", err)
		return
	}
	c.handleDecrypted(ctx, in, dec)
}

// maxKeyWaits bounds the messages waiting for a late room key at once:
// each holds a goroutine for up to keyWaitShort+keyWaitLong (28 s).
const maxKeyWaits = 32

// undecryptable stands in for the text of a stranger's message whose room
// key is missing, on its way to the gate (which offers pairing).
const undecryptable = "[an encrypted message that could not be decrypted]"

// awaitLateKey handles an encrypted message whose room key has not arrived.
// Waiting for the key, and asking the sender's devices for it, is only for
// messages the bot would take: the sender's admission and the room's group
// policy are decided first, as far as they can be without the text, so
// anyone in a joined room cannot make the bot hold goroutines and send key
// requests. A stranger in a direct chat goes to the gate as a plain
// message from a stranger does, which offers pairing (the message could
// not be read anyway); a stranger in a room is dropped. At most
// maxKeyWaits messages wait at once; more are skipped with a warning.
func (c *Channel) awaitLateKey(ctx context.Context, in channels.Inbox, eng cryptoEngine, evt *event.Event, log *slog.Logger) {
	sender := string(evt.Sender)
	group := !c.isDirect(ctx, evt.RoomID)
	if !channels.Admits(in, c.Name(), sender) {
		if group {
			log.Debug("matrix: an encrypted room message from a sender not on allowFrom was skipped; its room key is missing")
			return
		}
		c.deliver(ctx, in, bus.Inbound{
			Channel: c.Name(), SenderID: sender, ChatID: string(evt.RoomID), MessageID: string(evt.ID),
			Content:    undecryptable,
			Metadata:   bus.Metadata{"event_id": string(evt.ID), "sender": sender},
			ReceivedAt: time.Now(),
		})
		return
	}
	// Whether a room message addresses the bot is in its text; until it
	// can be read, assume it may.
	if !c.cfg.GroupPolicy.Admits(group, true, string(evt.RoomID), c.cfg.GroupAllowFrom) {
		log.Debug("matrix: an encrypted message of a room not for the bot was skipped; its room key is missing")
		return
	}
	select {
	case c.keyWaits <- struct{}{}:
	default:
		log.Warn("matrix: an encrypted message was skipped: too many messages are already waiting for their room keys", "waiting", maxKeyWaits)
		return
	}
	c.pending.Add(1)
	go func() {
		defer func() {
			<-c.keyWaits
			c.pending.Done()
		}()
		if !eng.awaitKey(ctx, evt) {
			if ctx.Err() == nil {
				log.Warn("matrix: an encrypted message was skipped: its room key never arrived")
			}
			return
		}
		dec, err := eng.decrypt(ctx, evt)
		if err != nil {
			log.Warn("matrix: an encrypted message could not be decrypted and was skipped", "err", err)
			return
		}
		c.handleDecrypted(ctx, in, dec)
	}()
}

func (c *Channel) handleDecrypted(ctx context.Context, in channels.Inbox, dec *event.Event) {
	if dec.Sender == c.me {
		return
	}
	if dec.Type.Type == event.EventMessage.Type {
		c.handle(ctx, in, dec)
		return
	}
	if strings.HasPrefix(dec.Type.Type, "m.key.verification.") {
		c.verificationEvent(ctx, dec)
	}
}

// verificationEvent passes a device verification event on to the
// encryption, which answers it with sasVerification on.
func (c *Channel) verificationEvent(ctx context.Context, evt *event.Event) {
	if eng := c.engine(); eng != nil {
		eng.verification(ctx, evt)
	}
}

// prepareSend readies an encrypted room for the first message this process
// sends into it; unencrypted rooms cost one lookup.
func (c *Channel) prepareSend(ctx context.Context, room id.RoomID) error {
	c.mu.Lock()
	eng, done := c.crypto, c.prepared[room]
	c.mu.Unlock()
	if eng == nil || done {
		return nil
	}
	if err := eng.prepare(ctx, room); err != nil {
		return err
	}
	c.mu.Lock()
	c.prepared[room] = true
	c.mu.Unlock()
	return nil
}

// encryptedRoom reports whether what is sent into room must be encrypted
// (never true without encryption: the client then sends in plain text).
func (c *Channel) encryptedRoom(ctx context.Context, room id.RoomID) (bool, error) {
	if c.engine() == nil || c.cli.StateStore == nil {
		return false, nil
	}
	enc, err := c.cli.StateStore.IsEncrypted(ctx, room)
	if err != nil {
		return false, fmt.Errorf("matrix: room state of %s: %w", room, err)
	}
	return enc, nil
}
