//go:build goolm

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/matrix/matrixtest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway"
	"github.com/nanobot-go/nanobot/internal/syncbuf"
	"github.com/nanobot-go/nanobot/internal/testproc"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/openai"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestMatrixEncryptedDirectChatEndToEnd runs the real gateway with Matrix
// on a real Dendrite and e2eeEnabled: a user's own encryption capable
// device (a second client with its own Olm account) opens an encrypted
// direct chat with the bot and writes; the model sees the decrypted text,
// and the streamed answer reaches the user's device as m.room.encrypted
// events it decrypts. The gateway is then restarted on the same instance
// folder, and a second encrypted message is answered the same way.
func TestMatrixEncryptedDirectChatEndToEnd(t *testing.T) {
	srv, stop, err := matrixtest.Launch()
	if errors.Is(err, matrixtest.ErrNotInstalled) {
		testproc.Missing(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	bot, ann := srv.Register(t, "bot"), srv.Register(t, "ann")

	var calls atomic.Int64
	answers := []string{"The first answer, sealed.", "The second answer, after a restart, sealed too."}
	llm := providertest.New(t)
	llm.Handle(func(providertest.Request) providertest.Reply {
		n := min(int(calls.Add(1)), len(answers)) - 1
		return providertest.Reply{Text: answers[n], Chunks: 6, EventDelay: 100 * time.Millisecond}
	})
	dir := t.TempDir()
	mxConfig := map[string]any{
		"enabled": true, "homeserver": srv.URL, "userId": string(bot.ID), "accessToken": bot.Token,
		"allowFrom": []string{string(ann.ID)}, "e2eeEnabled": true,
	}
	logs := &syncbuf.Buffer{}
	stopGateway := runGatewayIn(t, dir, map[string]any{"matrix": mxConfig}, llm, logs)

	dev := srv.NewDevice(t, ann)
	room := dev.CreateEncryptedDM(t, bot.ID)
	dev.WaitJoined(t, room, bot.ID)

	ask := func(question, answer string) {
		t.Helper()
		asked := dev.Say(t, room, question)
		if typ, err := dev.RawType(context.Background(), room, asked); err != nil || typ != "m.room.encrypted" {
			t.Fatalf("the question is stored as %q (%v), want m.room.encrypted", typ, err)
		}
		waitfor.Within(t, "the encrypted answer "+answer, 40*time.Second, func() bool {
			for _, r := range dev.Seen() {
				if r.Sender == bot.ID && r.Body == answer {
					return true
				}
			}
			return false
		})
		reqs := llm.Requests()
		if last, _ := json.Marshal(reqs[len(reqs)-1].Messages()); !strings.Contains(string(last), question) {
			t.Errorf("the model did not get the decrypted question %q: %s", question, last)
		}
		for _, r := range dev.Seen() {
			if r.Sender != bot.ID {
				continue
			}
			if !r.Encrypted {
				t.Errorf("the bot sent %q in plain text into an encrypted room", r.Body)
			}
			if typ, err := dev.RawType(context.Background(), room, r.ID); err != nil || typ != "m.room.encrypted" {
				t.Errorf("bot event %s is stored as %q (%v)", r.ID, typ, err)
			}
		}
	}
	ask("what is the secret plan?", answers[0])

	stopGateway()
	runGatewayIn(t, dir, map[string]any{"matrix": mxConfig}, llm, logs)
	ask("and after the restart?", answers[1])

	for _, secret := range []string{bot.Token} {
		if strings.Contains(logs.String(), secret) {
			t.Error("the access token is in the gateway's log")
		}
	}
	key, err := os.ReadFile(filepath.Join(dir, "state", "matrix-crypto.key"))
	if err != nil {
		t.Fatalf("the crypto key is not in the instance's state folder: %v", err)
	}
	if bytes.Contains([]byte(logs.String()), key) {
		t.Error("the crypto key is in the gateway's log")
	}
}

// runGatewayIn runs the real gateway in-process on the instance folder dir
// (so a second call restarts it with the same state) until stop is called
// or the test ends.
func runGatewayIn(t *testing.T, dir string, chans map[string]any, llm *providertest.Server, logs io.Writer) (stop func()) {
	t.Helper()
	chans["sendProgress"], chans["sendToolHints"] = false, false
	body, _ := json.Marshal(map[string]any{
		"agents":   map[string]any{"defaults": map[string]any{"model": "test-model"}},
		"channels": chans,
		"gateway":  map[string]any{"heartbeat": map[string]any{"enabled": false}},
	})
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := configs.Load(configs.Options{Path: path, Environ: []string{}, Platforms: platformTypes()})
	if err != nil {
		t.Fatal(err)
	}
	provider, err := openai.New(openai.Options{Endpoint: providers.Endpoint{APIBase: llm.OpenAIBase()}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan string, 1)
	go func() {
		done <- gateway.Run(ctx, gateway.Options{
			Config: &loaded.Config, Paths: loaded.Paths, Provider: provider, Model: "test-model",
			Channels: newChannelRegistry(), Listener: ln, Ready: func(a string) { ready <- a },
			DrainTimeout: 2 * time.Second, Stderr: io.Discard, Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		})
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("gateway: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Error("gateway did not stop")
			}
		})
	}
	t.Cleanup(stop)
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("gateway exited: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("gateway not ready")
	}
	return stop
}
