package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/xmpp/xmpptest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestXMPPEndToEnd runs the real gateway with the XMPP channel against a
// real Prosody (skipped where Prosody is not installed, failing under CI):
// an allowed user's message gets the scripted model's reply, streamed as a
// message plus XEP-0308 corrections; a stranger gets a pairing code and
// never reaches the model.
func TestXMPPEndToEnd(t *testing.T) {
	srv := xmpptest.Start(t)
	for _, u := range []string{"bot", "ann", "stranger"} {
		srv.MustRegister(t, u, "pw-"+u)
	}
	ann := srv.Dial(t, "ann", "pw-ann")
	stranger := srv.Dial(t, "stranger", "pw-stranger")
	bot := "bot@" + xmpptest.Domain

	llm := providertest.New(t)
	llm.Handle(func(providertest.Request) providertest.Reply {
		return providertest.Reply{Text: scriptedAnswer, Chunks: 12, EventDelay: 150 * time.Millisecond}
	})
	base := startTestGateway(t, map[string]any{
		"xmpp": map[string]any{
			"enabled": true, "jid": bot, "password": "pw-bot",
			"server": srv.Addr, "caFile": srv.CAFile,
			"allowFrom": []string{"ann@" + xmpptest.Domain},
		},
	}, llm)

	// The bot is online once it answers; until then messages wait offline.
	ann.Send(t, bot, "chat", "hello there", "")
	var first xmpptest.Message
	corrections := 0
	waitfor.Within(t, "the streamed reply", 60*time.Second, func() bool {
		corrections = 0
		shown := ""
		for _, m := range ann.Messages() {
			switch {
			case m.Body == "":
			case m.Replace == "":
				first, shown = m, m.Body
			case m.Replace == first.ID:
				corrections++
				shown = m.Body
			}
		}
		return shown == scriptedAnswer
	})
	if corrections == 0 {
		t.Errorf("the reply arrived without corrections; want it streamed")
	}
	if got := len(llm.Requests()); got != 1 {
		t.Errorf("model called %d times for one message", got)
	}

	stranger.Send(t, bot, "chat", "let me in", "")
	waitfor.Within(t, "the stranger's pairing code", 30*time.Second, func() bool {
		for _, m := range stranger.Messages() {
			if strings.Contains(m.Body, "pairing code") {
				return true
			}
		}
		return false
	})
	waitfor.Within(t, "the gate to count the denial", 10*time.Second, func() bool {
		return inboundCount(t, base, "xmpp", "denied") >= 1
	})
	if got := len(llm.Requests()); got != 1 {
		t.Errorf("the stranger reached the model: %d requests, want 1", got)
	}
	t.Logf("reply: 1 message + %d corrections", corrections)
}
