package approval

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/tools"
)

// message is the chat message of a request: what will run, why it is
// asked, and the three answers as buttons and as commands to type.
func message(req Request) bus.Outbound {
	var b strings.Builder
	fmt.Fprintf(&b, "⚠️ Approval needed (%s): the agent wants to run\n\n```\n%s\n```\n", req.Tool, fence(req.Action))
	if len(req.Reasons) > 0 {
		fmt.Fprintf(&b, "\nWhy I ask: %s.\n", strings.Join(req.Reasons, "; "))
	}
	fmt.Fprintf(&b, "\nAn admin answers with the buttons, or types `/approve %s` (once), `/approve %s always` or `/deny %s`. "+
		"No answer by %s UTC means no.", req.ID, req.ID, req.ID, req.Expires.UTC().Format("15:04"))
	return bus.Outbound{
		Channel: req.Channel, ChatID: req.ChatID, SessionKey: req.SessionKey, Kind: bus.KindMessage,
		Content: b.String(),
		Actions: []bus.Action{
			{Label: "Allow once", Command: "/approve " + req.ID},
			{Label: "Always allow", Command: "/approve " + req.ID + " always"},
			{Label: "Deny", Command: "/deny " + req.ID},
		},
	}
}

// fence keeps a command from closing the code block it is shown in.
func fence(s string) string { return strings.ReplaceAll(s, "```", "` ` `") }

// ParseAnswer reads "/approve ID", "/approve ID always" and "/deny ID" (a
// "@botname" after the command is ignored). ok is false for anything else.
func ParseAnswer(text string) (id string, d Decision, ok bool) {
	f := strings.Fields(text)
	if len(f) < 2 || len(f) > 3 {
		return "", Deny, false
	}
	cmd, _, _ := strings.Cut(strings.ToLower(f[0]), "@")
	switch {
	case cmd == "/approve" && len(f) == 2:
		return f[1], AllowOnce, true
	case cmd == "/approve" && strings.EqualFold(f[2], "always"):
		return f[1], AllowAlways, true
	case cmd == "/deny" && len(f) == 2:
		return f[1], Deny, true
	}
	return "", Deny, false
}

// AnswerCommand applies an admin's typed or pressed answer ("/approve ID",
// "/approve ID always", "/deny ID"); by names them for the audit log. It
// returns the reply to show; ok is false when text is not an answer.
func (b *Broker) AnswerCommand(text, by string) (reply string, ok bool) {
	id, d, ok := ParseAnswer(text)
	if !ok {
		return "Usage: /approve ID, /approve ID always, or /deny ID.", false
	}
	req, err := b.Answer(id, d, by)
	switch {
	case errors.Is(err, ErrUnknown):
		return fmt.Sprintf("Nothing waits for approval as %s: it was answered already, timed out, or the id is wrong.", id), true
	case err != nil:
		return fmt.Sprintf("Allowed: %s. But %v", tools.OneLine(req.Action, 80), err), true
	case d == Deny:
		return "Denied: " + tools.OneLine(req.Action, 80), true
	case d == AllowAlways:
		return "Allowed, now and from now on: " + tools.OneLine(req.Action, 80), true
	}
	return "Allowed once: " + tools.OneLine(req.Action, 80), true
}
