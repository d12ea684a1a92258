package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/irc/irctest"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestIRCEndToEnd: the real gateway with the IRC channel against a real
// ngIRCd. Alice's private message goes through the gateway to the scripted
// model and the answer comes back over IRC; a stranger's message is
// answered with a pairing code by the gateway and never reaches the model.
func TestIRCEndToEnd(t *testing.T) {
	srv := irctest.Start(t, irctest.Options{})
	llm := providertest.New(t)
	llm.Handle(func(providertest.Request) providertest.Reply {
		return providertest.Reply{Text: "The next train leaves at 9:12."}
	})
	alice := irctest.Dial(t, srv.Addr(), "alice")
	alice.Join("#nanobot")
	stranger := irctest.Dial(t, srv.Addr(), "stranger")
	base := startTestGateway(t, map[string]any{"irc": map[string]any{
		"enabled": true, "server": "127.0.0.1", "port": srv.Port, "tls": false,
		"nick": "nanobot", "channels": []map[string]any{{"name": "#nanobot"}},
		"allowFrom": []string{"alice"}, "floodIntervalMs": 50,
	}}, llm)
	alice.Wait("the bot joining", func(l irctest.Line) bool { return l.Msg.Command == "JOIN" && l.Msg.Nick() == "nanobot" })

	stranger.Privmsg("nanobot", "let me talk to your model")
	stranger.Wait("a pairing code", func(l irctest.Line) bool {
		return l.Msg.Command == "PRIVMSG" && l.Msg.Nick() == "nanobot" && strings.Contains(strings.ToLower(l.Msg.Params[1]), "pairing")
	})
	alice.Privmsg("nanobot", "When is the next train?")
	alice.WaitFrom(0, 30*time.Second, "the model's answer", func(l irctest.Line) bool {
		return l.Msg.Command == "PRIVMSG" && l.Msg.Nick() == "nanobot" && l.Msg.Params[0] == "alice" && l.Msg.Params[1] == "The next train leaves at 9:12."
	})
	if n := len(llm.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1: the stranger must not reach the model", n)
	}
	if n := inboundCount(t, base, "irc", "accepted"); n != 1 {
		t.Errorf("%d IRC messages accepted, want only alice's", n)
	}
	for _, l := range stranger.Lines() {
		if l.Msg.Command == "PRIVMSG" && strings.Contains(l.Msg.Params[1], "9:12") {
			t.Errorf("the stranger got the model's answer: %q", l.Raw)
		}
	}
}
