//go:build !goolm

package matrix

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/syncbuf"
)

// A binary built without the goolm tag has no encryption: e2eeEnabled
// says so in the log and the channel still serves unencrypted rooms.
func TestEncryptionMissingFromTheBuildIsLogged(t *testing.T) {
	s := homeserver(t)
	w := newWorld(t, s)
	state := t.TempDir()
	w.seedSyncToken(t, state)
	logs := &syncbuf.Buffer{}
	ch := newChannel(t, s, w.bot, channels.Deps{Log: slog.New(slog.NewTextHandler(logs, nil)), Paths: configs.Paths{State: state}},
		func(c *Config) { c.E2EEEnabled = true })
	in := newInbox("")
	run(t, ch, in)
	say(t, w.alice, w.dm["alice"], text("plain words"))
	in.Wait(t, "plain words")
	if !strings.Contains(logs.String(), "built without end-to-end encryption (go build -tags goolm)") {
		t.Errorf("no word about the missing encryption in the log:\n%s", logs.String())
	}
}
