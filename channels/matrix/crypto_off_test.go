//go:build !goolm

package matrix

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
)

type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A binary built without the goolm tag has no encryption: e2eeEnabled
// says so in the log and the channel still serves unencrypted rooms.
func TestEncryptionMissingFromTheBuildIsLogged(t *testing.T) {
	s := homeserver(t)
	w := newWorld(t, s)
	state := t.TempDir()
	w.seedSyncToken(t, state)
	logs := &lockedLog{}
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
