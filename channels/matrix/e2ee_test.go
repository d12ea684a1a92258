//go:build goolm

package matrix

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto/attachment"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/matrix/matrixtest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/syncbuf"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// encryptedBot runs a channel with e2eeEnabled for bot with its state in
// stateDir, until the test ends or stop is called.
func encryptedBot(t *testing.T, s *matrixtest.Server, bot *matrixtest.User, stateDir string, logs *syncbuf.Buffer, edits ...func(*Config)) (ch *Channel, in *inbox, stop func()) {
	t.Helper()
	ch = newChannel(t, s, bot, channels.Deps{
		Log:   slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Paths: configs.Paths{State: stateDir, Media: t.TempDir()},
	}, func(c *Config) {
		c.E2EEEnabled = true
		for _, edit := range edits {
			edit(c)
		}
	})
	in = newInbox("")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, in) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-time.After(15 * time.Second):
				t.Error("Run did not return")
			}
		})
	}
	t.Cleanup(stop)
	waitfor.True(t, "the channel to connect", func() bool { return ch.Health().State == channels.StateConnected })
	return ch, in, stop
}

// waitReply waits until the user's device has decrypted a message from
// the bot with the text, and checks the homeserver holds it encrypted.
func waitReply(t *testing.T, dev *matrixtest.Device, room id.RoomID, bot id.UserID, text string) matrixtest.Received {
	t.Helper()
	var got matrixtest.Received
	waitfor.True(t, "the encrypted reply "+text, func() bool {
		for _, r := range dev.Seen() {
			if r.Room == room && r.Sender == bot && r.Body == text {
				got = r
				return true
			}
		}
		return false
	})
	if !got.Encrypted {
		t.Errorf("reply %q arrived in plain text", text)
	}
	typ, err := dev.RawType(context.Background(), room, got.ID)
	if err != nil || typ != event.EventEncrypted.Type {
		t.Errorf("the homeserver holds the reply as %v (%v), want m.room.encrypted", typ, err)
	}
	return got
}

func TestEncryptedDirectChat(t *testing.T) {
	s := homeserver(t)
	ctx := context.Background()
	bot, ann := s.Register(t, "bot"), s.Register(t, "ann")
	stateDir := t.TempDir()
	logs := &syncbuf.Buffer{}
	ch, in, stop := encryptedBot(t, s, bot, stateDir, logs)

	dev := s.NewDevice(t, ann)
	room := dev.CreateEncryptedDM(t, bot.ID)
	// The bot joins on the invitation (ann is on allowFrom).
	dev.WaitJoined(t, room, bot.ID)

	// A broken encrypted event first: it is logged and skipped, and the
	// next message is still read.
	if _, err := ann.SendMessageEvent(ctx, room, event.EventEncrypted, map[string]any{
		"algorithm": id.AlgorithmMegolmV1, "ciphertext": "not-a-megolm-message", "session_id": "short",
		"sender_key": "x", "device_id": string(ann.DeviceID),
	}); err != nil {
		t.Fatal(err)
	}
	asked := dev.Say(t, room, "hello in secret")
	typ, err := dev.RawType(ctx, room, asked)
	if err != nil || typ != event.EventEncrypted.Type {
		t.Fatalf("the test's message is stored as %v (%v), want m.room.encrypted", typ, err)
	}
	m := in.Wait(t, "hello in secret")
	if m.ChatID != string(room) || m.SenderID != string(ann.ID) || m.MessageID != string(asked) || m.IsGroup {
		t.Errorf("inbound = %+v", m)
	}
	if !strings.Contains(logs.String(), "could not be decrypted and was skipped") {
		t.Errorf("the broken event was not logged as skipped:\n%s", logs.String())
	}

	// The reply is encrypted, and so is a streaming edit of it.
	ref, err := ch.Send(ctx, bus.Outbound{Channel: "matrix", ChatID: m.ChatID, Content: "a **secret** answer"})
	if err != nil {
		t.Fatal(err)
	}
	waitReply(t, dev, room, bot.ID, "a **secret** answer")
	if err := ch.Edit(ctx, ref, bus.Outbound{Channel: "matrix", ChatID: m.ChatID, Content: "a **secret** answer, edited"}); err != nil {
		t.Fatal(err)
	}
	if r := waitReply(t, dev, room, bot.ID, "a **secret** answer, edited"); !r.Edit {
		t.Errorf("the edit arrived as a new message: %+v", r)
	}

	// The crypto store and its key are the instance's secrets: 0600.
	for _, name := range []string{"matrix-crypto.json", "matrix-crypto.key"} {
		st, err := os.Stat(filepath.Join(stateDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", name, st.Mode().Perm())
		}
	}
	key, _ := os.ReadFile(filepath.Join(stateDir, "matrix-crypto.key"))
	for _, secret := range []string{string(key), bot.Token} {
		if strings.Contains(logs.String(), secret) {
			t.Error("a secret is in the log")
		}
	}

	// A restarted bot with the same store still decrypts and answers.
	stop()
	ch2, in2, _ := encryptedBot(t, s, bot, stateDir, logs)
	dev.Say(t, room, "still there after a restart?")
	m2 := in2.Wait(t, "still there after a restart?")
	if _, err := ch2.Send(ctx, bus.Outbound{Channel: "matrix", ChatID: m2.ChatID, Content: "yes, still encrypted"}); err != nil {
		t.Fatal(err)
	}
	waitReply(t, dev, room, bot.ID, "yes, still encrypted")
	if ch2.cli.DeviceID != ch.cli.DeviceID {
		t.Errorf("device after restart %s, want %s", ch2.cli.DeviceID, ch.cli.DeviceID)
	}
}

func TestEncryptionOnStillAnswersPlainRooms(t *testing.T) {
	s := homeserver(t)
	ctx := context.Background()
	w := newWorld(t, s)
	stateDir := t.TempDir()
	w.seedSyncToken(t, stateDir)
	ch, in, _ := encryptedBot(t, s, w.bot, stateDir, &syncbuf.Buffer{})
	say(t, w.alice, w.dm["alice"], text("plain hello"))
	m := in.Wait(t, "plain hello")
	ref, err := ch.Send(ctx, bus.Outbound{Channel: "matrix", ChatID: m.ChatID, Content: "plain answer"})
	if err != nil {
		t.Fatal(err)
	}
	evt := getEvent(t, w.alice, w.dm["alice"], id.EventID(ref.MessageID))
	if evt.Type != event.EventMessage {
		t.Errorf("the reply in an unencrypted room is %v, want m.room.message", evt.Type)
	}
}

func TestEncryptedRoomWithEncryptionOffIsReported(t *testing.T) {
	s := homeserver(t)
	bot, ann := s.Register(t, "bot"), s.Register(t, "ann")
	logs := &syncbuf.Buffer{}
	ch := newChannel(t, s, bot, channels.Deps{Log: slog.New(slog.NewTextHandler(logs, nil)), Paths: configs.Paths{State: t.TempDir()}}, nil)
	in := newInbox("")
	run(t, ch, in)
	waitfor.True(t, "the channel to connect", func() bool { return ch.Health().State == channels.StateConnected })
	dev := s.NewDevice(t, ann)
	room := dev.CreateEncryptedDM(t, bot.ID)
	dev.WaitJoined(t, room, bot.ID)
	dev.Say(t, room, "can you read this?")
	waitfor.True(t, "the unreadable message to be reported", func() bool {
		return strings.Contains(logs.String(), "end-to-end encryption is off (channels.matrix.e2eeEnabled)")
	})
	if n := len(in.All()); n != 0 {
		t.Errorf("%d messages delivered from an encrypted room the bot cannot read", n)
	}
}

func TestEncryptedFilesBothWays(t *testing.T) {
	s := homeserver(t)
	ctx := context.Background()
	bot, ann := s.Register(t, "bot"), s.Register(t, "ann")
	ch, in, _ := encryptedBot(t, s, bot, t.TempDir(), &syncbuf.Buffer{})
	dev := s.NewDevice(t, ann)
	room := dev.CreateEncryptedDM(t, bot.ID)
	dev.WaitJoined(t, room, bot.ID)
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte("secret pixels "), 8)...)

	// From the user: an encrypted attachment, as clients send it.
	file := attachment.NewEncryptedFile()
	up, err := ann.UploadMedia(ctx, mautrix.ReqUploadMedia{ContentBytes: file.Encrypt(png), ContentType: "application/octet-stream"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ann.SendMessageEvent(ctx, room, event.EventMessage, &event.MessageEventContent{
		MsgType: event.MsgImage, Body: "my secret chart", FileName: "chart.png",
		File: &event.EncryptedFileInfo{EncryptedFile: *file, URL: up.ContentURI.CUString()},
		Info: &event.FileInfo{MimeType: "image/png", Size: len(png)},
	}); err != nil {
		t.Fatal(err)
	}
	got := in.Wait(t, "my secret chart")
	if len(got.Media) != 1 {
		t.Fatalf("media %+v, content %q", got.Media, got.Content)
	}
	if data, err := os.ReadFile(got.Media[0].Path); err != nil || !bytes.Equal(data, png) {
		t.Errorf("the saved attachment is not the decrypted file (%v)", err)
	}

	// From the bot: the file is uploaded encrypted and the key sent in the
	// encrypted event.
	out := filepath.Join(t.TempDir(), "answer.png")
	if err := os.WriteFile(out, png, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.SendMedia(ctx, bus.Outbound{ChatID: string(room), Media: []bus.Media{{Path: out, MIMEType: "image/png"}}}); err != nil {
		t.Fatal(err)
	}
	var r matrixtest.Received
	waitfor.True(t, "the encrypted file", func() bool {
		for _, m := range dev.Seen() {
			if m.Sender == bot.ID && m.Body == "answer.png" {
				r = m
				return true
			}
		}
		return false
	})
	if !r.Encrypted || r.File == nil || r.URL != "" {
		t.Fatalf("the file arrived as %+v, want an encrypted event with an encrypted attachment", r)
	}
	uri, err := r.File.URL.Parse()
	if err != nil {
		t.Fatal(err)
	}
	stored, err := ann.DownloadBytes(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(stored, []byte("secret pixels")) {
		t.Error("the homeserver holds the file in plain text")
	}
	if err := r.File.DecryptInPlace(stored); err != nil || !bytes.Equal(stored, png) {
		t.Errorf("the user's device cannot decrypt the file (%v)", err)
	}
}

func TestSASVerification(t *testing.T) {
	s := homeserver(t)
	bot, ann, mallory := s.Register(t, "bot"), s.Register(t, "ann"), s.Register(t, "mallory")
	logs := &syncbuf.Buffer{}
	ch := newChannel(t, s, bot, channels.Deps{
		Log:   slog.New(slog.NewTextHandler(logs, nil)),
		Paths: configs.Paths{State: t.TempDir()},
	}, func(c *Config) { c.E2EEEnabled, c.SASVerification = true, true })
	in := newInbox(string(mallory.ID))
	run(t, ch, in)
	waitfor.True(t, "the channel to connect", func() bool { return ch.Health().State == channels.StateConnected })
	dev := s.NewDevice(t, ann)
	room := dev.CreateEncryptedDM(t, bot.ID)
	dev.WaitJoined(t, room, bot.ID)

	sas, err := dev.Verify(t, bot.ID)
	if err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	if len(sas.Decimals) != 3 || len(sas.Emoji) != 7 {
		t.Fatalf("the user's device showed %+v", sas)
	}
	// The operator compares what the log shows with the user's screen:
	// the same numbers.
	want := fmt.Sprintf("decimals=\"%d %d %d\"", sas.Decimals[0], sas.Decimals[1], sas.Decimals[2])
	waitfor.True(t, "the bot to log "+want, func() bool { return strings.Contains(logs.String(), want) })
	trust, err := dev.DeviceTrust(context.Background(), bot.ID, ch.cli.DeviceID)
	if err != nil || trust != id.TrustStateVerified {
		t.Errorf("the user's device regards the bot's as %v (%v), want verified", trust, err)
	}
	waitfor.True(t, "the bot to finish", func() bool { return strings.Contains(logs.String(), "device verification done") })

	// An in-room request (what mautrix cannot finish) is answered with a
	// log line, not a half-done verification, and never reaches the agent.
	if _, err := ann.SendMessageEvent(context.Background(), room, event.EventMessage, &event.MessageEventContent{
		MsgType: event.MsgVerificationRequest, Body: "verification request", FromDevice: ann.DeviceID,
		Methods: []event.VerificationMethod{event.VerificationMethodSAS}, To: bot.ID,
	}); err != nil {
		t.Fatal(err)
	}
	waitfor.True(t, "the in-room request to be declined in the log", func() bool {
		return strings.Contains(logs.String(), "in-room device verification is not supported")
	})
	if n := len(in.All()); n != 0 {
		t.Errorf("%d verification messages reached the agent", n)
	}

	// Someone not on allowFrom is turned away.
	stranger := s.NewDevice(t, mallory)
	if _, err := stranger.Verify(t, bot.ID); err == nil || !strings.Contains(err.Error(), "allow list") {
		t.Errorf("a stranger's verification ended with %v, want a cancellation", err)
	}
	if !strings.Contains(logs.String(), "device verification request declined") {
		t.Error("the declined request is not in the log")
	}
}

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
	stateDir, logs := t.TempDir(), &syncbuf.Buffer{}
	sas := func(c *Config) { c.SASVerification = true }
	ch, in, stop := encryptedBot(t, s, bot, stateDir, logs, sas)
	dev := s.NewDevice(t, ann)
	room := dev.CreateEncryptedDM(t, bot.ID)
	dev.WaitJoined(t, room, bot.ID)
	if _, err := dev.Verify(t, bot.ID); err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	waitfor.True(t, "the bot to finish the verification", func() bool { return strings.Contains(logs.String(), "device verification done") })
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
	_, _, stop := encryptedBot(t, s, bot, t.TempDir(), &syncbuf.Buffer{})
	stop()
	stateDir := t.TempDir()
	old := append([]byte("SQLite format 3\x00"), bytes.Repeat([]byte{1}, 64)...)
	oldPath := filepath.Join(stateDir, "matrix-crypto.db")
	if err := os.WriteFile(oldPath, old, 0o600); err != nil {
		t.Fatal(err)
	}

	logs := &syncbuf.Buffer{}
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
	waitfor.True(t, "the channel to connect", func() bool { return ch2.Health().State == channels.StateConnected })
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
