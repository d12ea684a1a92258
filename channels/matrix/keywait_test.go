package matrix

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// lateKeyEngine is an encryption whose room keys never arrive: every
// decrypt fails with errNoRoomKey, and awaitKey, which in the real engine
// asks the sender's devices for the key, counts the request and waits
// until the test releases it.
type lateKeyEngine struct {
	requests atomic.Int32
	release  chan struct{}
	once     sync.Once
}

// releaseAll ends every wait, current and future.
func (e *lateKeyEngine) releaseAll() { e.once.Do(func() { close(e.release) }) }

func (e *lateKeyEngine) storedDevice(context.Context) (id.DeviceID, error) { return "", nil }
func (e *lateKeyEngine) start(context.Context, channels.Inbox) error       { return nil }
func (e *lateKeyEngine) sync(context.Context, *mautrix.RespSync, string)   {}
func (e *lateKeyEngine) prepare(context.Context, id.RoomID) error          { return nil }
func (e *lateKeyEngine) verification(context.Context, *event.Event)        {}
func (e *lateKeyEngine) close() error                                      { return nil }
func (e *lateKeyEngine) decrypt(context.Context, *event.Event) (*event.Event, error) {
	return nil, errNoRoomKey
}

func (e *lateKeyEngine) awaitKey(ctx context.Context, _ *event.Event) bool {
	e.requests.Add(1)
	select {
	case <-e.release:
	case <-ctx.Done():
	}
	return false
}

// keyLog is a log sink the test reads while the channel writes to it.
type keyLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *keyLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *keyLog) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

const (
	dmRoom    = id.RoomID("!dm:localhost")
	groupRoom = id.RoomID("!group:localhost")
	stranger  = "@stranger:localhost"
)

// lateKeyChannel is a channel with the engine above, never connected: the
// rooms' member counts are known (a direct chat and a group), so nothing
// asks the homeserver. Waiting messages are released when the test ends.
func lateKeyChannel(t *testing.T, edit func(*Config)) (*Channel, *lateKeyEngine, *keyLog) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Enabled, cfg.AllowFrom = true, []string{"@ann:localhost"}
	cfg.Homeserver, cfg.UserID, cfg.AccessToken = "http://127.0.0.1:1", "@bot:localhost", "token"
	if edit != nil {
		edit(&cfg)
	}
	logs := &keyLog{}
	ch, err := New(cfg, channels.Deps{Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	eng := &lateKeyEngine{release: make(chan struct{})}
	ch.crypto = eng
	ch.members[dmRoom], ch.members[groupRoom] = 2, 3
	t.Cleanup(func() {
		eng.releaseAll()
		ch.pending.Wait()
	})
	return ch, eng, logs
}

// encrypted is an m.room.encrypted event whose room key is unknown.
func encrypted(room id.RoomID, sender string, n int) *event.Event {
	raw := fmt.Sprintf(`{"algorithm":"m.megolm.v1.aes-sha2","sender_key":"c2VuZGVya2V5","ciphertext":"Y2lwaGVy","session_id":"session-%d","device_id":"PHONE"}`, n)
	return &event.Event{
		Type: event.EventEncrypted, RoomID: room, ID: id.EventID(fmt.Sprintf("$e%d", n)),
		Sender: id.UserID(sender), Content: event.Content{VeryRaw: []byte(raw)},
	}
}

// Whose encrypted message with a missing room key makes the bot wait and
// ask for the key: only one it would take. A stranger's costs neither; in
// a direct chat it goes to the gate, which offers pairing as it does for
// a plain message.
func TestLateRoomKeyWaitsOnlyForAdmittedMessages(t *testing.T) {
	tests := []struct {
		name      string
		room      id.RoomID
		sender    string
		edit      func(*Config)
		requests  int32
		delivered int
	}{
		{"stranger in a direct chat", dmRoom, stranger, nil, 0, 1},
		{"stranger in a room", groupRoom, stranger, nil, 0, 0},
		{"allowed sender in a direct chat", dmRoom, "@ann:localhost", nil, 1, 0},
		{"allowed sender in a room (mention policy)", groupRoom, "@ann:localhost", nil, 1, 0},
		{"allowed sender in a room off the allowlist", groupRoom, "@ann:localhost", func(c *Config) {
			c.GroupPolicy, c.GroupAllowFrom = channels.GroupAllowlist, []string{"!other:localhost"}
		}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, eng, _ := lateKeyChannel(t, tt.edit)
			in := newInbox(stranger)
			ch.handleEncrypted(t.Context(), in, encrypted(tt.room, tt.sender, 1))
			if tt.requests > 0 {
				waitfor.True(t, "the key request", func() bool { return eng.requests.Load() == tt.requests })
			}
			got := in.All()
			if len(got) != tt.delivered {
				t.Fatalf("delivered %d messages, want %d", len(got), tt.delivered)
			}
			if tt.delivered > 0 && (got[0].SenderID != stranger || got[0].IsGroup || got[0].ChatID != string(tt.room)) {
				t.Errorf("delivered %+v, want the stranger's direct message for the gate", got[0])
			}
			eng.releaseAll()
			ch.pending.Wait()
			if n := eng.requests.Load(); n != tt.requests {
				t.Errorf("%d key requests, want %d", n, tt.requests)
			}
		})
	}
}

// A stranger flooding a room with encrypted messages whose keys are
// missing costs no key request and no goroutine.
func TestStrangerEncryptedFloodCostsNothing(t *testing.T) {
	for _, room := range []id.RoomID{groupRoom, dmRoom} {
		t.Run(string(room), func(t *testing.T) {
			ch, eng, _ := lateKeyChannel(t, nil)
			in := newInbox(stranger)
			before := runtime.NumGoroutine()
			for i := range 100 {
				ch.handleEncrypted(t.Context(), in, encrypted(room, stranger, i))
			}
			if grown := runtime.NumGoroutine() - before; grown > 5 {
				t.Errorf("100 encrypted messages from a stranger left %d more goroutines, want none", grown)
			}
			if n := eng.requests.Load(); n != 0 {
				t.Errorf("%d key requests for a stranger's messages, want 0", n)
			}
		})
	}
}

// At most maxKeyWaits messages wait for their keys at once; more are
// skipped with a warning, and a slot is free again once a wait ends.
func TestLateRoomKeyWaitsAreCapped(t *testing.T) {
	ch, eng, logs := lateKeyChannel(t, nil)
	in := newInbox(stranger)
	for i := range maxKeyWaits + 8 {
		ch.handleEncrypted(t.Context(), in, encrypted(dmRoom, "@ann:localhost", i))
	}
	waitfor.True(t, "the waits to start", func() bool { return eng.requests.Load() == maxKeyWaits })
	if n := logs.count("too many messages are already waiting"); n != 8 {
		t.Errorf("%d messages skipped with a warning, want 8", n)
	}
	eng.releaseAll()
	ch.pending.Wait()
	if n := eng.requests.Load(); n != maxKeyWaits {
		t.Errorf("%d key requests, want %d", n, maxKeyWaits)
	}

	ch.handleEncrypted(t.Context(), in, encrypted(dmRoom, "@ann:localhost", 1000))
	ch.pending.Wait()
	if n := eng.requests.Load(); n != maxKeyWaits+1 {
		t.Errorf("after the waits ended, a new message made %d key requests in all, want %d", n, maxKeyWaits+1)
	}
}
