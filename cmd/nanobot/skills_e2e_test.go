package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent/skills/registry/registrytest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestSkillFromRegistryThroughTheGateway: a skill installed from the
// (fake) registry is offered to the model in the next prompt; an admin's
// /skill disable takes it out of the prompt from the next message, and a
// non-admin's is refused.
func TestSkillFromRegistryThroughTheGateway(t *testing.T) {
	reg := registrytest.New(t)
	reg.Publish("tide-tables", registrytest.Version{Version: "1.0.0", Archive: registrytest.Zip(t, map[string]string{
		"SKILL.md": registrytest.Skill("tide-tables", "Tide times for any harbour")})})
	llm := providertest.New(t)
	llm.Handle(func(providertest.Request) providertest.Reply { return providertest.Reply{Text: "ok"} })
	tg := telegramtest.New(t)
	dir := t.TempDir()
	cfg := scriptedConfig(t, dir, llm, fmt.Sprintf(`"telegram": {"enabled": true, "token": %q, "apiBase": %q,
	    "allowFrom": ["4242|ann", "5151|bob"], "admins": ["4242"]}`, telegramtest.Token, tg.URL), ``, `"enabled": false`)
	var tree map[string]any
	raw, _ := os.ReadFile(cfg)
	if err := json.Unmarshal(raw, &tree); err != nil {
		t.Fatal(err)
	}
	tree["skills"] = map[string]any{"registries": []any{map[string]any{"name": "fake", "url": reg.URL}}}
	raw, _ = json.Marshal(tree)
	if err := os.WriteFile(cfg, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := runIn(t, "skills", "install", "tide-tables", "--config", cfg); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	launchGateway(t, cfg)

	ann := telegramtest.User{ID: 4242, Username: "ann", FirstName: "Ann"}
	bob := telegramtest.User{ID: 5151, Username: "bob", FirstName: "Bob"}
	say := func(from telegramtest.User, text, want string) {
		t.Helper()
		n := len(tg.Sent())
		tg.Send(telegramtest.Msg{From: from, Chat: telegramtest.Chat{ID: from.ID, Type: "private"}, Text: text})
		waitfor.Within(t, "the answer to "+text, 60*time.Second, func() bool {
			for _, s := range tg.Sent()[n:] {
				if strings.Contains(s.Visible, want) {
					return true
				}
			}
			return false
		})
	}
	lastPrompt := func() string {
		reqs := llm.Requests()
		return string(reqs[len(reqs)-1].Raw)
	}
	say(ann, "hello", "ok")
	if p := lastPrompt(); !strings.Contains(p, "tide-tables") || !strings.Contains(p, "Tide times for any harbour") {
		t.Fatalf("the installed skill is not in the prompt")
	}
	say(bob, "/skill disable tide-tables", "admin")
	say(ann, "/skill disable tide-tables", "tide-tables")
	say(ann, "hello again", "ok")
	if strings.Contains(lastPrompt(), "Tide times for any harbour") {
		t.Error("the disabled skill is still in the prompt")
	}
}
