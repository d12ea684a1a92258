package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/onebot/onebottest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestOneBotEndToEnd: a OneBot v11 implementation connects to the
// gateway's own HTTP server (reverse websocket, access token checked); a
// private message goes through the whole gateway and the answer goes back
// with send_private_msg, quoting the message; a group message that
// at-mentions the bot is answered in the group. A stranger's message never
// reaches the model (it gets a pairing code), and neither does anything
// pushed over a connection with a wrong token.
func TestOneBotEndToEnd(t *testing.T) {
	fake := onebottest.New(t, time.Second)
	llm := providertest.New(t)
	llm.Handle(func(providertest.Request) providertest.Reply {
		return providertest.Reply{Text: "Your order ships **tomorrow**."}
	})
	const ann, stranger, grp = 424242, 999999, 777
	base := startTestGateway(t, map[string]any{"onebot": map[string]any{
		"enabled": true, "mode": "reverse", "accessToken": onebottest.Token, "allowFrom": []string{"424242"},
	}}, llm)
	endpoint := "ws" + strings.TrimPrefix(base, "http") + "/onebot/ws"
	intruder := onebottest.New(t, 0)
	intruder.DialReverse(endpoint, "guessed-token", 20*time.Millisecond)
	intruder.Emit(onebottest.Message{From: ann, Text: "forged over a wrong token"})
	fake.DialReverse(endpoint, onebottest.Token, 50*time.Millisecond)

	fake.Emit(onebottest.Message{From: stranger, Text: "let me in"})
	_, annMsg := fake.Emit(onebottest.Message{From: ann, Text: "where is my order?"})
	waitfor.Within(t, "the answer to ann", 30*time.Second, func() bool {
		for _, s := range fake.Sent() {
			if s.ChatID == "424242" && s.Text == "Your order ships tomorrow." {
				return true
			}
		}
		return false
	})
	fake.Emit(onebottest.Message{From: ann, Group: grp, Text: "and the invoice?", AtBot: true})
	waitfor.Within(t, "the answer in the group", 30*time.Second, func() bool {
		for _, s := range fake.Sent() {
			if s.ChatID == "group:777" {
				return true
			}
		}
		return false
	})
	for _, s := range fake.Sent() {
		if s.ChatID == "424242" && (len(s.Segments) == 0 || s.Segments[0].Type != "reply" || s.Segments[0].Data["id"] != annMsg) {
			t.Errorf("the answer does not quote ann's message %s: %+v", annMsg, s.Segments)
		}
		if s.ChatID == "999999" && !containsPairing(s.Text) {
			t.Errorf("the stranger got %q", s.Text)
		}
	}
	waitfor.Within(t, "the stranger denied", 10*time.Second, func() bool { return inboundCount(t, base, "onebot", "denied") == 1 })
	if n := inboundCount(t, base, "onebot", "accepted"); n != 2 {
		t.Errorf("%d messages accepted, want ann's two", n)
	}
	if n := len(llm.Requests()); n != 2 {
		t.Errorf("%d model requests, want 2: the stranger and the intruder must not reach the model", n)
	}
	if intruder.Connects() != 0 {
		t.Errorf("a connection with a wrong token was taken %d times", intruder.Connects())
	}
	if v := fake.Violations(); len(v) > 0 {
		t.Errorf("protocol violations: %v", v)
	}
}
