package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/discord/discordtest"
	"github.com/nanobot-go/nanobot/channels/slack/slacktest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/openai"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// scriptedAnswer is what the scripted model says; streamed slowly enough
// that every platform that edits shows it growing.
const scriptedAnswer = "The quick brown fox jumps over the lazy dog, twice, for good measure."

// platform drives one platform fake in the end-to-end test.
type platform struct {
	name   string
	config func() map[string]any
	// send has a user write text in a direct chat.
	send func(text string)
	// shown reports the bot's messages in that chat as they look now, and
	// how many edits were made.
	shown func() (texts []string, edits int)
}

// TestPlatformsEndToEnd runs the real gateway (channel registry, manager,
// agent loop, dispatcher, the OpenAI backend against a scripted model) with
// Telegram, Slack and Discord adapters against their platform fakes and
// Matrix against a real Dendrite (where installed): a user
// message gets the scripted reply on the same chat, streamed as edits; a
// slash command is answered without the model.
func TestPlatformsEndToEnd(t *testing.T) {
	tg := telegramtest.New(t)
	sl := slacktest.New(t)
	dc := discordtest.New(t)
	user := telegramtest.User{ID: 4242, Username: "ann", FirstName: "Ann"}
	platforms := []platform{
		{
			name: "telegram",
			config: func() map[string]any {
				// Edits, as on the other platforms: private chats stream
				// as drafts by default (TestTelegramDraftsEndToEnd).
				return map[string]any{"enabled": true, "token": telegramtest.Token, "apiBase": tg.URL, "streamMode": "edit"}
			},
			send: func(text string) {
				tg.Send(telegramtest.Msg{From: user, Chat: telegramtest.Chat{ID: user.ID, Type: "private"}, Text: text})
			},
			shown: func() ([]string, int) {
				latest := map[int64]string{}
				var order []int64
				edits := 0
				for _, s := range tg.Sent() {
					if s.ChatID != user.ID {
						continue
					}
					if s.Edit {
						edits++
					} else {
						order = append(order, s.MessageID)
					}
					latest[s.MessageID] = s.Visible
				}
				var out []string
				for _, id := range order {
					out = append(out, latest[id])
				}
				return out, edits
			},
		},
		{
			name: "slack",
			config: func() map[string]any {
				return map[string]any{"enabled": true, "appToken": slacktest.AppToken, "botToken": slacktest.BotToken, "apiBase": sl.APIBase()}
			},
			send: func(text string) {
				sl.Push(slacktest.Event{Channel: "D4242", ChannelType: "im", User: "U4242", Text: text})
			},
			shown: func() ([]string, int) {
				latest := map[string]string{}
				var order []string
				edits := 0
				for _, s := range sl.Sent() {
					if s.Channel != "D4242" {
						continue
					}
					if s.Edit {
						edits++
					} else {
						order = append(order, s.TS)
					}
					latest[s.TS] = s.Rendered
				}
				var out []string
				for _, ts := range order {
					out = append(out, latest[ts])
				}
				return out, edits
			},
		},
		{
			name: "discord",
			config: func() map[string]any {
				return map[string]any{"enabled": true, "token": discordtest.Token, "apiBase": dc.URL}
			},
			send: func(text string) {
				dc.Send(discordtest.Msg{From: discordtest.User{ID: "4242", Username: "ann"}, ChannelID: "D4242", Content: text})
			},
			shown: func() ([]string, int) {
				latest := map[string]string{}
				var order []string
				edits := 0
				for _, s := range dc.Sent() {
					if s.ChannelID != "D4242" {
						continue
					}
					if s.Edit {
						edits++
					} else {
						order = append(order, s.MessageID)
					}
					latest[s.MessageID] = s.Content
				}
				var out []string
				for _, id := range order {
					out = append(out, latest[id])
				}
				return out, edits
			},
		},
	}

	if mx := matrixPlatform(t); mx != nil {
		platforms = append(platforms, *mx)
	}

	llm := providertest.New(t)
	llm.Handle(func(providertest.Request) providertest.Reply {
		return providertest.Reply{Text: scriptedAnswer, Chunks: 12, EventDelay: 150 * time.Millisecond}
	})

	chans := map[string]any{}
	for _, p := range platforms {
		c := p.config()
		c["allowFrom"] = []string{"*"}
		chans[p.name] = c
	}
	startTestGateway(t, chans, llm)

	for _, p := range platforms {
		t.Run(p.name, func(t *testing.T) {
			before := len(llm.Requests())
			p.send("hello there")
			waitfor.Within(t, "the streamed reply", 30*time.Second, func() bool {
				texts, _ := p.shown()
				return len(texts) == 1 && texts[0] == scriptedAnswer
			})
			texts, edits := p.shown()
			if edits == 0 {
				t.Errorf("reply %q arrived without edits; want it streamed", texts)
			}
			if got := len(llm.Requests()) - before; got != 1 {
				t.Errorf("model called %d times for one message", got)
			}

			// A slash command is answered by the gateway, not the model.
			before = len(llm.Requests())
			p.send("/help")
			waitfor.Within(t, "the /help answer", 30*time.Second, func() bool {
				texts, _ := p.shown()
				return len(texts) >= 2 && strings.Contains(texts[len(texts)-1], "/new")
			})
			if got := len(llm.Requests()) - before; got != 0 {
				t.Errorf("/help reached the model (%d requests)", got)
			}
		})
	}
}

// startTestGateway runs the real gateway in-process with the given
// channels config and the OpenAI backend pointed at llm; it stops when the
// test ends. It returns the base URL of the gateway's HTTP server.
func startTestGateway(t *testing.T, chans map[string]any, llm *providertest.Server) string {
	t.Helper()
	chans["sendProgress"], chans["sendToolHints"] = false, false
	dir := t.TempDir()
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
			DrainTimeout: 2 * time.Second, Stderr: io.Discard, Log: slog.New(slog.DiscardHandler),
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("gateway: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("gateway did not stop")
		}
	})
	select {
	case addr := <-ready:
		return "http://" + addr
	case err := <-done:
		t.Fatalf("gateway exited: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("gateway not ready")
	}
	return ""
}

// inboundCount reads nanobot_inbound_messages_total for one channel and
// outcome (accepted, denied, duplicate) from the gateway's /metrics: the
// positive signal that the gate has decided on a message, so a test can
// assert what did not happen without sleeping.
func inboundCount(t *testing.T, base, channel, outcome string) int {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	series := fmt.Sprintf("nanobot_inbound_messages_total{channel=%q,outcome=%q} ", channel, outcome)
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metrics line %q: %v", line, err)
			}
			return int(n)
		}
	}
	return 0
}
