package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// runAgentsGateway runs the real gateway on the config at path, wired as
// `nanobot gateway` wires it (providers from the registry per agent and
// preset, tools per agent). stop shuts it down and waits.
func runAgentsGateway(t *testing.T, path string) (base string, stop func()) {
	t.Helper()
	loaded, err := configs.Load(configs.Options{Path: path, Environ: []string{}, Platforms: platformTypes()})
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Warnings) > 0 {
		t.Fatalf("config warnings: %v", loaded.Warnings)
	}
	log := slog.New(slog.DiscardHandler)
	a := &app{loaded: loaded, log: log}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := a.wire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := &loaded.Config
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	ready := make(chan string, 1)
	go func() {
		done <- gateway.Run(ctx, gateway.Options{
			Config: c, Paths: loaded.Paths, Provider: w.provider, Model: w.model, Tools: w.tools, CronStore: w.cron,
			BuildModel: func(s configs.AgentDefaults) (providers.Provider, string, string) {
				p, m, name, _ := buildModel(c, s, log, nil)
				return p, m, name
			},
			BuildPreset: func(p configs.ModelPreset) (providers.Provider, error) { return buildPreset(c, p, log, nil) },
			ToolsFor:    a.agentTools(w.cron, w.sessions),
			Channels:    w.channels, Listener: ln, Ready: func(addr string) { ready <- addr },
			DrainTimeout: 2 * time.Second, Stderr: io.Discard, Log: log,
		})
	}()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("gateway: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("gateway did not stop")
		}
		w.close()
	}
	t.Cleanup(stop)
	select {
	case addr := <-ready:
		return "http://" + addr, stop
	case err := <-done:
		t.Fatalf("gateway exited: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("gateway not ready")
	}
	return "", stop
}

// TestAgentsEndToEnd: two agents on two Telegram chats, each answered by its
// own provider (two scripted servers); /model switches a chat to a preset
// on a third server, and the choice survives a gateway restart; a message
// from another bot is not answered.
func TestAgentsEndToEnd(t *testing.T) {
	tg := telegramtest.New(t)
	home, work, fast := providertest.New(t), providertest.New(t), providertest.New(t)
	home.Handle(func(r providertest.Request) providertest.Reply { return providertest.Reply{Text: "home answers"} })
	work.Handle(func(r providertest.Request) providertest.Reply { return providertest.Reply{Text: "work answers"} })
	fast.Handle(func(r providertest.Request) providertest.Reply { return providertest.Reply{Text: "fast answers"} })

	dir := t.TempDir()
	body, _ := json.Marshal(map[string]any{
		"providers": map[string]any{
			"vllm": map[string]any{"apiBase": home.OpenAIBase()}, "ollama": map[string]any{"apiBase": work.OpenAIBase()},
			"lmstudio": map[string]any{"apiBase": fast.OpenAIBase()},
		},
		"modelPresets": map[string]any{
			"fast":   map[string]any{"provider": "lmstudio", "model": "fast-model", "maxTokens": 512},
			"claude": map[string]any{"provider": "anthropic", "model": "claude-opus"}, // no key configured
		},
		"agents": map[string]any{
			"defaults": map[string]any{"model": "home-model", "provider": "vllm"},
			"list":     []any{map[string]any{"name": "work", "model": "work-model", "provider": "ollama", "tools": map[string]any{"deny": []string{"exec"}}}},
		},
		"bindings": []any{map[string]any{"agent": "work", "match": map[string]any{"channel": "telegram", "chatId": "200"}}},
		"channels": map[string]any{
			"sendProgress": false, "sendToolHints": false,
			"telegram": map[string]any{"enabled": true, "token": telegramtest.Token, "apiBase": tg.URL, "allowFrom": []string{"*"}},
		},
		"gateway": map[string]any{"heartbeat": map[string]any{"enabled": false}},
	})
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}

	ann := telegramtest.User{ID: 100, Username: "ann", FirstName: "Ann"}
	bob := telegramtest.User{ID: 200, Username: "bob", FirstName: "Bob"}
	say := func(u telegramtest.User, text string) {
		tg.Send(telegramtest.Msg{From: u, Chat: telegramtest.Chat{ID: u.ID, Type: "private"}, Text: text})
	}
	// lastIn returns the latest message the bot sent to chat once it
	// contains want.
	waitReply := func(chat int64, want string) {
		t.Helper()
		waitfor.Within(t, "reply containing "+want, 20*time.Second, func() bool {
			for _, s := range tg.Sent() {
				if s.ChatID == chat && strings.Contains(s.Visible, want) {
					return true
				}
			}
			return false
		})
	}
	countIn := func(chat int64, want string) int {
		n := 0
		for _, s := range tg.Sent() {
			if s.ChatID == chat && !s.Edit && strings.Contains(s.Visible, want) {
				n++
			}
		}
		return n
	}

	base, stop := runAgentsGateway(t, path)
	say(ann, "hello")
	waitReply(100, "home answers")
	say(bob, "hello")
	waitReply(200, "work answers")
	if got := work.Requests()[0].Model; got != "work-model" {
		t.Errorf("work agent sent model %q, want work-model", got)
	}
	if n := len(home.Requests()); n != 1 {
		t.Errorf("home provider got %d requests, want 1 (bob's chat is bound to work)", n)
	}
	var toolNames []string
	for _, tl := range work.Requests()[0].Body["tools"].([]any) {
		toolNames = append(toolNames, tl.(map[string]any)["function"].(map[string]any)["name"].(string))
	}
	if strings.Contains(strings.Join(toolNames, ","), "exec") || len(toolNames) == 0 {
		t.Errorf("work agent offers %v: want tools without exec", toolNames)
	}
	if _, err := os.Stat(filepath.Join(dir, "agents", "work", "workspace", "AGENTS.md")); err != nil {
		t.Errorf("work agent's own workspace: %v", err)
	}

	say(ann, "/model claude")
	waitReply(100, `Cannot switch to "claude"`)
	say(ann, "/model fast")
	waitReply(100, "Switched to fast (fast-model)")
	say(ann, "and now?")
	waitReply(100, "fast answers")
	if got := fast.Requests()[0]; got.Model != "fast-model" {
		t.Errorf("preset request model %q", got.Model)
	}

	stop()
	homeBefore := len(home.Requests())
	base, _ = runAgentsGateway(t, path)
	say(ann, "after the restart")
	waitfor.Within(t, "second answer from the preset", 20*time.Second, func() bool { return countIn(100, "fast answers") == 2 })
	if n := len(home.Requests()); n != homeBefore {
		t.Errorf("home provider got %d new requests after the restart, want 0 (the chat chose fast)", n-homeBefore)
	}
	last := fast.Requests()[len(fast.Requests())-1]
	if !strings.Contains(string(last.Raw), "hello") {
		t.Errorf("history lost across the switch and restart: %s", last.Raw)
	}

	// Another bot writing in the chat is not answered.
	requestsBefore := len(fast.Requests())
	say(telegramtest.User{ID: 100, Username: "otherbot", FirstName: "Robo", IsBot: true}, "talk to me, bot")
	waitfor.Within(t, "the bot message screened", 20*time.Second, func() bool { return inboundCount(t, base, "telegram", "bot") == 1 })
	say(ann, "/model")
	waitReply(100, "fast — fast-model (current)")
	if n := len(fast.Requests()); n != requestsBefore {
		t.Errorf("a bot's message reached the model (%d new requests)", n-requestsBefore)
	}
}
