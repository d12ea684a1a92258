package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/channels/discord/discordtest"
	"github.com/nanobot-go/nanobot/channels/slack/slacktest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// gatewayBase is the HTTP base of the gateway configured in cfg.
func gatewayBase(t *testing.T, cfg string) string {
	t.Helper()
	raw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Gateway struct {
			Port int `json:"port"`
		} `json:"gateway"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("http://127.0.0.1:%d", c.Gateway.Port)
}

// TestDiscordSlashCommandsEndToEnd runs the gateway binary on the fake
// Discord: the chat commands become application commands on connect (the
// approval answers only with approvals on), and again, unchanged, after a
// restart; /help used from the menu is answered
// in place (the deferred response completed) with what the asker may use,
// as the typed /help would be; a non-admin's /pairing list is refused in
// place by the gate; a sender not on allowFrom is denied by the gate like
// typed text, and their deferred response withdrawn.
func TestDiscordSlashCommandsEndToEnd(t *testing.T) {
	llm := providertest.New(t)
	dc := discordtest.New(t)
	dir := t.TempDir()
	cfg := scriptedConfig(t, dir, llm, fmt.Sprintf(`"discord": {"enabled": true, "token": %q, "apiBase": %q,
	    "allowFrom": ["4242", "5151"], "admins": ["4242"]}`, discordtest.Token, dc.URL), "", `"enabled": false`)
	first := launchGateway(t, cfg)
	waitfor.Within(t, "the commands registered", 60*time.Second, func() bool { return dc.CommandPuts("") == 1 })
	registered := dc.Commands("")
	names := map[string]bool{}
	for _, c := range registered {
		names[c.Name] = true
	}
	for _, want := range []string{"new", "stop", "help", "status", "model", "goal", "skill", "usage", "pairing"} {
		if !names[want] {
			t.Errorf("/%s not registered (have %v)", want, names)
		}
	}
	if names["approve"] {
		t.Error("/approve registered without exec approvals")
	}
	first.stop()
	launchGateway(t, cfg)
	waitfor.Within(t, "the commands registered again", 60*time.Second, func() bool { return dc.CommandPuts("") == 2 })
	if again := dc.Commands(""); !cmp.Equal(again, registered) {
		t.Errorf("a restart changed the commands: %s", cmp.Diff(registered, again))
	}

	ann, bob := discordtest.User{ID: "4242", Username: "ann"}, discordtest.User{ID: "5151", Username: "bob"}
	answer := func(id string) string {
		t.Helper()
		var got string
		waitfor.Within(t, "the answer to interaction "+id, 60*time.Second, func() bool {
			for _, s := range dc.Sent() {
				if s.Interaction == id && !s.Edit {
					got = s.Content
					return true
				}
			}
			return false
		})
		if cb, ok := dc.Callback(id); !ok || cb.Type != 5 {
			t.Errorf("interaction %s: callback %+v, want deferred", id, cb)
		}
		return got
	}
	annHelp := answer(dc.Invoke("D4242", "", ann, "help"))
	bobHelp := answer(dc.Invoke("D5151", "", bob, "help"))
	if !strings.Contains(annHelp, "Commands:") || !strings.Contains(annHelp, "/pairing") {
		t.Errorf("ann's /help:\n%s", annHelp)
	}
	if !strings.Contains(bobHelp, "/new") || strings.Contains(bobHelp, "/pairing") || strings.Contains(bobHelp, "/restart") {
		t.Errorf("bob's /help shows admin commands:\n%s", bobHelp)
	}
	if got := answer(dc.Invoke("D5151", "", bob, "pairing", discordtest.Option{Name: "action", Value: "list"})); got != "Only an admin can manage pairing." {
		t.Errorf("bob's /pairing list: %q", got)
	}

	// A stranger in a guild channel: the typed command and the slash one
	// are denied by the gate alike; nothing is answered in the channel.
	base := gatewayBase(t, cfg)
	eve := discordtest.User{ID: "6666", Username: "eve"}
	dc.Send(discordtest.Msg{From: eve, ChannelID: "7001", GuildID: "7000", Content: "<@" + discordtest.Bot.ID + "> /help", Mentions: []discordtest.User{discordtest.Bot}})
	waitfor.Within(t, "the typed command denied", 30*time.Second, func() bool { return inboundCount(t, base, "discord", "denied") == 1 })
	id := dc.Invoke("7001", "7000", eve, "help")
	waitfor.Within(t, "the slash command denied", 30*time.Second, func() bool { return inboundCount(t, base, "discord", "denied") == 2 })
	waitfor.Within(t, "the deferred response withdrawn", 30*time.Second, func() bool { return dc.Withdrawn(id) })
	for _, s := range dc.Sent() {
		if s.ChannelID == "7001" {
			t.Errorf("answered a stranger: %+v", s)
		}
	}
}

// TestSlackSlashCommandsEndToEnd runs the gateway binary on the fake
// Slack: "/nanobot help" is answered in the conversation with what the
// asker may use, a non-admin's "/nanobot pairing list" is refused by the
// gate, a stranger's command is denied like typed text, and the Home tab
// lists the commands.
func TestSlackSlashCommandsEndToEnd(t *testing.T) {
	llm := providertest.New(t)
	sl := slacktest.New(t)
	cfg, _ := scriptedGateway(t, llm, fmt.Sprintf(`"slack": {"enabled": true, "appToken": %q, "botToken": %q, "apiBase": %q,
	    "allowFrom": ["UANN", "UBOB"], "admins": ["UANN"]}`, slacktest.AppToken, slacktest.BotToken, sl.APIBase()), "", `"enabled": false`)
	answer := func(channel, what string) string {
		t.Helper()
		var got string
		waitfor.Within(t, what, 60*time.Second, func() bool {
			for _, s := range sl.Sent() {
				if s.Channel == channel {
					got = s.Rendered
					return true
				}
			}
			return false
		})
		return got
	}
	env, _ := sl.RunSlash(slacktest.Slash{Command: "/nanobot", Text: "help", Channel: "DANN", ChannelName: "directmessage", User: "UANN"})
	if got := answer("DANN", "ann's /nanobot help"); !strings.Contains(got, "Commands:") || !strings.Contains(got, "/pairing") {
		t.Errorf("ann's help:\n%s", got)
	}
	// The ack travels on the socket, the answer over HTTP: the fake may
	// read the answer first.
	waitfor.Within(t, "the slash command's ack", 30*time.Second, func() bool { _, ok := sl.AckOf(env); return ok })
	if a, _ := sl.AckOf(env); a.After > 3*time.Second {
		t.Errorf("ack %+v, want one within 3 s", a)
	}
	sl.RunSlash(slacktest.Slash{Command: "/nanobot", Text: "help", Channel: "DBOB", ChannelName: "directmessage", User: "UBOB"})
	if got := answer("DBOB", "bob's /nanobot help"); !strings.Contains(got, "/new") || strings.Contains(got, "/pairing") {
		t.Errorf("bob's help shows admin commands:\n%s", got)
	}
	sl.RunSlash(slacktest.Slash{Command: "/nanobot", Text: "pairing list", Channel: "C2", User: "UBOB"})
	if got := answer("C2", "bob's /nanobot pairing list"); got != "Only an admin can manage pairing." {
		t.Errorf("bob's pairing list: %q", got)
	}

	base := gatewayBase(t, cfg)
	sl.Push(slacktest.Event{Type: "app_mention", Channel: "C1", User: "UEVE", Text: "<@" + slacktest.BotUserID + "> hello"})
	waitfor.Within(t, "the typed message denied", 30*time.Second, func() bool { return inboundCount(t, base, "slack", "denied") == 1 })
	sl.RunSlash(slacktest.Slash{Command: "/nanobot", Text: "help", Channel: "C1", User: "UEVE"})
	waitfor.Within(t, "the slash command denied", 30*time.Second, func() bool { return inboundCount(t, base, "slack", "denied") == 2 })
	for _, s := range sl.Sent() {
		if s.Channel == "C1" {
			t.Errorf("answered a stranger: %+v", s)
		}
	}

	sl.OpenHome("UANN", "home")
	waitfor.Within(t, "the Home tab", 30*time.Second, func() bool { return len(sl.Views()) == 1 })
	home := sl.Views()[0].Text()
	for _, want := range []string{"`/nanobot new`", "`/nanobot model [preset]`", "`/nanobot pairing <list|approve|deny|revoke> [target]`", "You can talk to me"} {
		if !strings.Contains(home, want) {
			t.Errorf("the Home tab lacks %q:\n%s", want, home)
		}
	}
}
