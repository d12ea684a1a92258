package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/mochat/mochattest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestMochatEndToEnd: a message in a watched Mochat session goes through
// the whole gateway (long poll -> adapter -> gate -> agent -> scripted
// model -> dispatcher -> sessions/send) and the answer comes back in the
// same session; a panel message from a stranger that mentions the bot gets
// nothing and never reaches the model.
func TestMochatEndToEnd(t *testing.T) {
	fake := mochattest.New(t, []string{"session_ann"}, map[string]string{"lobby": "group_1"})
	llm := providertest.New(t)
	llm.Handle(func(providertest.Request) providertest.Reply { return providertest.Reply{Text: "The build is green."} })
	base := startTestGateway(t, map[string]any{"mochat": map[string]any{
		"enabled": true, "baseUrl": fake.URL, "clawToken": mochattest.Token, "agentUserId": mochattest.BotID,
		"sessions": []string{"*"}, "panels": []string{"lobby"}, "allowFrom": []string{"ann"},
		"watchTimeoutMs": 1000, "pollIntervalMs": 50,
	}}, llm)

	fake.Post("lobby", mochattest.Message{From: "stranger", Text: "@bot answer me", Mentions: []string{mochattest.BotID}})
	id := fake.Say("session_ann", mochattest.Message{From: "ann", Text: "Is the build green?"})
	waitfor.Within(t, "the answer in ann's session", 30*time.Second, func() bool { return len(fake.Sent()) > 0 })
	waitfor.Within(t, "the stranger denied", 10*time.Second, func() bool { return inboundCount(t, base, "mochat", "denied") == 1 })
	if n := inboundCount(t, base, "mochat", "accepted"); n != 1 {
		t.Errorf("%d messages accepted, want only ann's", n)
	}
	sent := fake.Sent()
	if len(sent) != 1 || sent[0].Session != "session_ann" || !strings.Contains(sent[0].Content, "The build is green.") || sent[0].ReplyTo != id {
		t.Errorf("sent %+v, want one answer to %s in session_ann", sent, id)
	}
	if n := len(llm.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1: the stranger must not reach the model", n)
	}
	if bad := fake.BadCalls(); len(bad) > 0 {
		t.Errorf("protocol violations: %v", bad)
	}
}
