//go:build goolm

package matrix

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/id"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/matrix/matrixtest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/bus"
)

// store is the running channel's crypto store.
func (c *Channel) store(t *testing.T) *cryptoStore {
	t.Helper()
	e, ok := c.engine().(*olmCrypto)
	if !ok {
		t.Fatal("the channel has no encryption")
	}
	return e.store
}

// TestEncryptedRestartKeepsSessionsAndVerification: after a conversation
// and an emoji verification, a new Channel on the same store file (as a
// restarted process) reads and writes in the room with the same device
// keys, the same outbound room key, and the verification kept on both
// sides.
func TestEncryptedRestartKeepsSessionsAndVerification(t *testing.T) {
	s := homeserver(t)
	ctx := context.Background()
	bot, ann := s.Register(t, "bot"), s.Register(t, "ann")
	stateDir, logs := t.TempDir(), &syncBuffer{}
	sas := func(c *Config) { c.SASVerification = true }
	ch, in, stop := encryptedBot(t, s, bot, stateDir, logs, sas)
	dev := s.NewDevice(t, ann)
	room := dev.CreateEncryptedDM(t, bot.ID)
	dev.WaitJoined(t, room, bot.ID)
	if _, err := dev.Verify(t, bot.ID); err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	waitFor(t, "the bot to finish the verification", func() bool { return strings.Contains(logs.String(), "device verification done") })
	dev.Say(t, room, "before the restart")
	m := in.Wait(t, "before the restart")
	if _, err := ch.Send(ctx, bus.Outbound{Channel: "matrix", ChatID: m.ChatID, Content: "answer before"}); err != nil {
		t.Fatal(err)
	}
	waitReply(t, dev, room, bot.ID, "answer before")
	ogs, _ := ch.store(t).GetOutboundGroupSession(ctx, room)
	if ogs == nil {
		t.Fatal("no outbound room key after the first answer")
	}
	fingerprint := ch.engine().(*olmCrypto).machine().Fingerprint()
	stop()

	ch2, in2, _ := encryptedBot(t, s, bot, stateDir, logs, sas)
	dev.Say(t, room, "after the restart")
	m2 := in2.Wait(t, "after the restart")
	if _, err := ch2.Send(ctx, bus.Outbound{Channel: "matrix", ChatID: m2.ChatID, Content: "answer after"}); err != nil {
		t.Fatal(err)
	}
	waitReply(t, dev, room, bot.ID, "answer after")
	if fp := ch2.engine().(*olmCrypto).machine().Fingerprint(); fp != fingerprint || ch2.cli.DeviceID != ch.cli.DeviceID {
		t.Errorf("after the restart device %s %s, want %s %s", ch2.cli.DeviceID, fp, ch.cli.DeviceID, fingerprint)
	}
	ogs2, _ := ch2.store(t).GetOutboundGroupSession(ctx, room)
	switch {
	case ogs2 == nil:
		t.Error("no outbound room key after the restart")
	case ogs2.ID() != ogs.ID() || ogs2.MessageCount <= ogs.MessageCount:
		t.Errorf("outbound room key after the restart %s at %d messages, want %s continued past %d", ogs2.ID(), ogs2.MessageCount, ogs.ID(), ogs.MessageCount)
	}
	if trust, err := dev.DeviceTrust(ctx, bot.ID, ch2.cli.DeviceID); err != nil || trust != id.TrustStateVerified {
		t.Errorf("the user's device regards the bot's as %v (%v), want verified", trust, err)
	}
	devs, _ := ch2.store(t).GetDevices(ctx, ann.ID)
	verified := false
	for _, d := range devs {
		verified = verified || d.Trust == id.TrustStateVerified
	}
	if !verified {
		t.Errorf("the bot forgot it verified the user's device: %+v", devs)
	}
}

// TestEncryptionAfterSQLiteStore: an instance upgraded from the SQLite
// store (matrix-crypto.db, no longer read) says so, refuses the old
// device whose keys the homeserver holds with an error saying what to do,
// and works on a new device from a password login. The old file stays.
func TestEncryptionAfterSQLiteStore(t *testing.T) {
	s := homeserver(t)
	bot, ann := s.Register(t, "bot"), s.Register(t, "ann")
	// The old install: the token's device has keys on the homeserver.
	_, _, stop := encryptedBot(t, s, bot, t.TempDir(), &syncBuffer{})
	stop()
	stateDir := t.TempDir()
	old := append([]byte("SQLite format 3\x00"), bytes.Repeat([]byte{1}, 64)...)
	oldPath := filepath.Join(stateDir, "matrix-crypto.db")
	if err := os.WriteFile(oldPath, old, 0o600); err != nil {
		t.Fatal(err)
	}

	logs := &syncBuffer{}
	deps := channels.Deps{Log: slog.New(slog.NewTextHandler(logs, nil)), Paths: configs.Paths{State: stateDir, Media: t.TempDir()}}
	ch := newChannel(t, s, bot, deps, func(c *Config) { c.E2EEEnabled = true })
	done := run(t, ch, newInbox(""))
	select {
	case err := <-done:
		done <- err
		if err == nil || !strings.Contains(err.Error(), "already has encryption keys") || !strings.Contains(err.Error(), "new access token") {
			t.Errorf("Run with the old device: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run with the old device's token did not stop")
	}
	if !strings.Contains(logs.String(), "SQLite crypto store of an older nanobot is no longer read") {
		t.Errorf("the upgrade is not in the log:\n%s", logs.String())
	}

	ch2 := newChannel(t, s, bot, deps, func(c *Config) {
		c.E2EEEnabled, c.AccessToken, c.Password = true, "", matrixtest.Password(bot)
	})
	in := newInbox("")
	run(t, ch2, in)
	waitFor(t, "the channel to connect", func() bool { return ch2.Health().State == channels.StateConnected })
	if ch2.cli.DeviceID == ch.cli.DeviceID {
		t.Errorf("password login kept the old device %s", ch.cli.DeviceID)
	}
	dev := s.NewDevice(t, ann)
	room := dev.CreateEncryptedDM(t, bot.ID)
	dev.WaitJoined(t, room, bot.ID)
	dev.Say(t, room, "hello new device")
	m := in.Wait(t, "hello new device")
	if _, err := ch2.Send(context.Background(), bus.Outbound{Channel: "matrix", ChatID: m.ChatID, Content: "hello from the new device"}); err != nil {
		t.Fatal(err)
	}
	waitReply(t, dev, room, bot.ID, "hello from the new device")
	if b, _ := os.ReadFile(oldPath); !bytes.Equal(b, old) {
		t.Error("the old SQLite store was changed")
	}
}
