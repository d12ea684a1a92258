package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/discord/discordtest"
	"github.com/nanobot-go/nanobot/channels/slack/slacktest"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestExecApprovalThroughTelegram runs the gateway binary with
// tools.exec.approval "risky" on the fake Telegram: a risky command the
// model asks for is shown to the chat with buttons and runs only when an
// admin presses "Allow once"; a non-admin's press does nothing; "Deny"
// runs nothing and tells the model; "Always allow" runs it and saves the
// exact command to the config, so the same command later runs unasked; a
// harmless command never asks.
func TestExecApprovalThroughTelegram(t *testing.T) {
	harmless := toolCall("c5", "exec", `{"command":"touch harmless"}`)
	llm := providertest.New(t)
	llm.Push(
		riskyCall("c1", "once"), providertest.Reply{Text: "reply one"},
		riskyCall("c2", "denied"), providertest.Reply{Text: "reply two"},
		riskyCall("c3", "always"), providertest.Reply{Text: "reply three"},
		riskyCall("c4", "always"), providertest.Reply{Text: "reply four"},
		harmless, providertest.Reply{Text: "reply five"},
		riskyCall("c6", "from-terminal"), providertest.Reply{Text: "reply six"},
	)
	tg := telegramtest.New(t)
	cfg, ws := approvalGateway(t, llm, fmt.Sprintf(`"telegram": {"enabled": true, "token": %q, "apiBase": %q,
	    "allowFrom": ["4242|ann", "5151|bob"], "admins": ["4242"]}`, telegramtest.Token, tg.URL))

	ann := telegramtest.User{ID: 4242, Username: "ann", FirstName: "Ann"}
	bob := telegramtest.User{ID: 5151, Username: "bob", FirstName: "Bob"}
	chat := telegramtest.Chat{ID: 777, Type: "group", Title: "ops"}
	// next waits for the bot's next message in the chat after the first
	// `from` sent, matching want, and returns it with the new count.
	next := func(from int, what string, want func(telegramtest.Sent) bool) (telegramtest.Sent, int) {
		t.Helper()
		var got telegramtest.Sent
		n := from
		waitfor.Within(t, what, 60*time.Second, func() bool {
			sent := tg.Sent()
			for i := from; i < len(sent); i++ {
				if want(sent[i]) {
					got, n = sent[i], i+1
					return true
				}
			}
			return false
		})
		return got, n
	}
	text := func(s string) func(telegramtest.Sent) bool {
		return func(m telegramtest.Sent) bool { return strings.Contains(m.Visible, s) }
	}
	asking := func(m telegramtest.Sent) bool { return len(m.Buttons) > 0 }
	exists := func(name string) bool { _, err := os.Stat(filepath.Join(ws, name)); return err == nil }
	mention := "@" + telegramtest.BotUsername + " "

	// 1. Allow once — after a non-admin's press was refused.
	tg.Send(telegramtest.Msg{From: ann, Chat: chat, Text: mention + "do the first thing"})
	req, n := next(0, "the approval request", asking)
	if !strings.Contains(req.Visible, "curl") || !strings.Contains(req.Visible, "network access") {
		t.Errorf("the request does not show the command and why it asks:\n%s", req.Visible)
	}
	tg.Press(chat, bob, req.MessageID, "Allow once")
	_, n = next(n, "the refusal of a non-admin", text("Only an admin"))
	if exists("once") {
		t.Fatal("the command ran on a non-admin's press")
	}
	tg.Press(chat, ann, req.MessageID, "Allow once")
	_, n = next(n, "the answer after the command ran", text("reply one"))
	if !exists("once") {
		t.Error("the command allowed once did not run")
	}

	// 2. Deny: nothing runs, the model is told.
	tg.Send(telegramtest.Msg{From: ann, Chat: chat, Text: mention + "do the second thing"})
	req, n = next(n, "the second approval request", asking)
	tg.Press(chat, ann, req.MessageID, "Deny")
	_, n = next(n, "the answer after the denial", text("reply two"))
	if exists("denied") {
		t.Error("a denied command ran")
	}
	reqs := llm.Requests()
	if last := string(reqs[len(reqs)-1].Raw); !strings.Contains(last, "denied") {
		t.Errorf("the model was not told of the denial:\n%s", last)
	}

	// 3. Always allow: runs, and the exact command lands in the config.
	tg.Send(telegramtest.Msg{From: ann, Chat: chat, Text: mention + "do the third thing"})
	req, n = next(n, "the third approval request", asking)
	tg.Press(chat, ann, req.MessageID, "Always allow")
	_, n = next(n, "the answer after always", text("reply three"))
	if !exists("always") {
		t.Error("the command allowed always did not run")
	}
	saved, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(saved), `"approvedCommands"`) || !strings.Contains(string(saved), `touch always`) {
		t.Errorf("the pattern was not saved to the config:\n%s", saved)
	}
	if fi, err := os.Stat(cfg); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("config mode after saving the pattern: %v %v", fi.Mode(), err)
	}

	// 4. The same command again runs unasked; 5. a harmless one too.
	_ = os.Remove(filepath.Join(ws, "always"))
	tg.Send(telegramtest.Msg{From: ann, Chat: chat, Text: mention + "again"})
	_, m := next(n, "the answer to the remembered command", text("reply four"))
	tg.Send(telegramtest.Msg{From: ann, Chat: chat, Text: mention + "something harmless"})
	_, m = next(m, "the answer to the harmless command", text("reply five"))
	for _, s := range tg.Sent()[n:m] {
		if asking(s) {
			t.Errorf("asked again for an approved or harmless command: %s", s.Visible)
		}
	}
	if !exists("always") || !exists("harmless") {
		t.Error("the remembered or the harmless command did not run")
	}

	// 6. Answered from the terminal: `nanobot approvals list` and `allow`.
	tg.Send(telegramtest.Msg{From: ann, Chat: chat, Text: mention + "one more"})
	_, m = next(m, "the sixth approval request", asking)
	var id string
	waitfor.Within(t, "the request listed in the terminal", 30*time.Second, func() bool {
		out, err := exec.Command(binary(t), "approvals", "list", "--config", cfg).CombinedOutput()
		if err != nil {
			t.Fatalf("approvals list: %v\n%s", err, out)
		}
		if f := strings.Fields(string(out)); len(f) > 2 && strings.Contains(string(out), "from-terminal") {
			id = f[0]
			return true
		}
		return false
	})
	if out, err := exec.Command(binary(t), "approvals", "allow", id, "--config", cfg).CombinedOutput(); err != nil || !strings.Contains(string(out), "allowed once") {
		t.Fatalf("approvals allow %s: %v\n%s", id, err, out)
	}
	_, _ = next(m, "the answer after the terminal's yes", text("reply six"))
	if !exists("from-terminal") {
		t.Error("the command allowed from the terminal did not run")
	}

	// The audit log has every decision.
	audit, err := os.ReadFile(filepath.Join(filepath.Dir(cfg), "state", "approvals.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"allowed once"`, `"denied"`, `"allowed always"`, `"approved by pattern"`, `"by":"telegram:4242|ann"`, `"by":"workbench"`} {
		if !strings.Contains(string(audit), want) {
			t.Errorf("audit log lacks %s:\n%s", want, audit)
		}
	}
}

// riskyCall is a scripted exec call that touches marker in the workspace
// (so a test sees whether it ran) and reaches for the network (what makes
// it risky).
func riskyCall(id, marker string) providertest.Reply {
	return toolCall(id, "exec", fmt.Sprintf(`{"command":"touch %s; curl -s -m 1 http://127.0.0.1:9/ || true"}`, marker))
}

// approvalGateway starts the gateway binary with tools.exec.approval
// "risky", the scripted model and the channels given as JSON members; it
// returns the config's path and the workspace.
func approvalGateway(t *testing.T, llm *providertest.Server, channels string) (cfg, ws string) {
	t.Helper()
	return scriptedGateway(t, llm, channels, `"exec": {"approval": "risky", "approvalTimeout": 120}`, `"enabled": false`)
}

// scriptedGateway starts the gateway binary on the scripted model with the
// channels, tools and heartbeat settings given as JSON members; it returns
// the config's path and the workspace.
func scriptedGateway(t *testing.T, llm *providertest.Server, channels, toolSettings, heartbeat string) (cfg, ws string) {
	t.Helper()
	dir := t.TempDir()
	cfg = scriptedConfig(t, dir, llm, channels, toolSettings, heartbeat)
	launchGateway(t, cfg)
	return cfg, filepath.Join(dir, "workspace") // beside the config
}

// TestExecApprovalThroughSlack: the same request on Slack is a Block Kit
// message with buttons; a non-admin's press is refused, an admin's
// "Allow once" runs the command.
func TestExecApprovalThroughSlack(t *testing.T) {
	llm := providertest.New(t)
	llm.Push(riskyCall("c1", "slack-once"), providertest.Reply{Text: "slack done"})
	sl := slacktest.New(t)
	_, ws := approvalGateway(t, llm, fmt.Sprintf(`"slack": {"enabled": true, "appToken": %q, "botToken": %q, "apiBase": %q,
	    "allowFrom": ["UANN", "UBOB"], "admins": ["UANN"], "groupPolicy": "open"}`, slacktest.AppToken, slacktest.BotToken, sl.APIBase()))
	sl.Push(slacktest.Event{Channel: "C1", ChannelType: "channel", User: "UANN", Text: "please do it"})
	var req slacktest.Sent
	waitfor.Within(t, "the approval request with buttons", 60*time.Second, func() bool {
		for _, s := range sl.Sent() {
			if len(s.Buttons) == 3 {
				req = s
				return true
			}
		}
		return false
	})
	if !strings.Contains(req.Rendered, "curl") || req.Channel != "C1" {
		t.Errorf("request: %+v", req)
	}
	shown := func(text string) bool {
		for _, s := range sl.Sent() {
			if strings.Contains(s.Rendered, text) {
				return true
			}
		}
		return false
	}
	sl.Press("C1", req.TS, "UBOB", "Allow once")
	waitfor.Within(t, "the refusal of a non-admin", 30*time.Second, func() bool { return shown("Only an admin") })
	if _, err := os.Stat(filepath.Join(ws, "slack-once")); err == nil {
		t.Fatal("the command ran on a non-admin's press")
	}
	env := sl.Press("C1", req.TS, "UANN", "Allow once")
	waitfor.Within(t, "the answer after the command ran", 60*time.Second, func() bool { return shown("slack done") })
	if _, err := os.Stat(filepath.Join(ws, "slack-once")); err != nil {
		t.Error("the allowed command did not run")
	}
	// The ack travels on the socket, the answer over HTTP: the fake may
	// read the answer first.
	waitfor.Within(t, "the press acknowledged", 30*time.Second, func() bool { return sl.Acked(env) })
}

// TestExecApprovalThroughDiscord: on Discord the request carries buttons
// (message components); the press is answered at once, a non-admin's
// counts for nothing, an admin's "Deny" runs nothing.
func TestExecApprovalThroughDiscord(t *testing.T) {
	llm := providertest.New(t)
	llm.Push(riskyCall("c1", "discord-denied"), providertest.Reply{Text: "discord done"})
	dc := discordtest.New(t)
	_, ws := approvalGateway(t, llm, fmt.Sprintf(`"discord": {"enabled": true, "token": %q, "apiBase": %q,
	    "allowFrom": ["4242", "5151"], "admins": ["4242"]}`, discordtest.Token, dc.URL))
	ann, bob := discordtest.User{ID: "4242", Username: "ann"}, discordtest.User{ID: "5151", Username: "bob"}
	dc.Send(discordtest.Msg{From: ann, ChannelID: "D4242", Content: "please do it"})
	var req discordtest.Sent
	waitfor.Within(t, "the approval request with buttons", 60*time.Second, func() bool {
		for _, s := range dc.Sent() {
			if len(s.Buttons) == 3 {
				req = s
				return true
			}
		}
		return false
	})
	if !strings.Contains(req.Content, "curl") {
		t.Errorf("request: %+v", req)
	}
	shown := func(text string) bool {
		for _, s := range dc.Sent() {
			if strings.Contains(s.Content, text) {
				return true
			}
		}
		return false
	}
	press := dc.Press("D4242", "", req.MessageID, bob, "Allow once")
	waitfor.Within(t, "the refusal of a non-admin", 30*time.Second, func() bool { return shown("Only an admin") })
	if !dc.Answered(press) {
		t.Error("the press was not answered")
	}
	dc.Press("D4242", "", req.MessageID, ann, "Deny")
	waitfor.Within(t, "the answer after the denial", 60*time.Second, func() bool { return shown("discord done") })
	if _, err := os.Stat(filepath.Join(ws, "discord-denied")); err == nil {
		t.Error("a denied command ran")
	}
}
