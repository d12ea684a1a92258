package whatsapp

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mau.fi/whatsmeow"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
)

// An SQLite whatsapp.db of an earlier version without the new store stops
// the channel for good with the re-link instruction, and is left as it was.
func TestLegacyStoreStopsRun(t *testing.T) {
	state := t.TempDir()
	legacy := filepath.Join(state, LegacyStoreFile)
	old := []byte("SQLite format 3\x00 pretend pages")
	if err := os.WriteFile(legacy, old, 0o600); err != nil {
		t.Fatal(err)
	}
	ch, err := New(DefaultConfig(), channels.Deps{Paths: configs.Paths{State: state}})
	if err != nil {
		t.Fatal(err)
	}
	err = ch.Run(t.Context(), newInbox(""))
	if !errors.Is(err, ErrLegacyStore) || !channels.IsFatal(err) {
		t.Fatalf("Run = %v, want ErrLegacyStore as a fatal error", err)
	}
	if !strings.Contains(err.Error(), "nanobot channels login whatsapp") {
		t.Errorf("error %q does not name the login command", err)
	}
	if h := ch.Health(); h.State != channels.StateFailed {
		t.Errorf("health %+v, want failed", h)
	}
	got, err := os.ReadFile(legacy)
	if err != nil || !bytes.Equal(got, old) {
		t.Errorf("old store changed: %q, %v", got, err)
	}
	if _, err := os.Stat(ch.storePath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("new store created: %v", err)
	}
}

// Login still runs next to the old file (that is how users re-link), and
// says what became of it; once the new store exists Run ignores the old one.
func TestLegacyStoreLoginRelinks(t *testing.T) {
	fake := newFake()
	fake.loggedIn = false
	fake.qr = make(chan whatsmeow.QRChannelItem, 2)
	fake.qr <- whatsmeow.QRChannelItem{Event: "code", Code: "2@abc", Timeout: time.Minute}
	fake.qr <- whatsmeow.QRChannelSuccess
	close(fake.qr)
	ch := loginChannel(t, fake, "")
	if err := os.WriteFile(ch.legacyPath, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !ch.legacyOnly() {
		t.Fatal("legacyOnly = false with only whatsapp.db present")
	}
	p := &prompt{}
	if err := ch.Login(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if shown := strings.Join(p.shown, "\n"); !strings.Contains(shown, "format changed") || !strings.Contains(shown, ch.legacyPath) || !strings.Contains(shown, "Paired") {
		t.Errorf("login output %q: want the note on the old store and the pairing", shown)
	}
	if err := os.WriteFile(ch.storePath, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if ch.legacyOnly() {
		t.Error("legacyOnly = true with the new store present")
	}
}
