package main

import (
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/signal/signaltest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestSignalEndToEnd: a direct message comes in over the signal-cli event
// stream, goes through the whole gateway (adapter -> gate -> agent ->
// scripted model -> dispatcher) and the answer goes out with a JSON-RPC
// send to the sender. A stranger's message never reaches the model.
func TestSignalEndToEnd(t *testing.T) {
	fake := signaltest.New(t)
	llm := providertest.New(t)
	llm.Handle(func(providertest.Request) providertest.Reply {
		return providertest.Reply{Text: "The meeting is at **three**."}
	})
	ann := signaltest.User{Number: "+15550004242", UUID: "cccccccc-1111-4222-8333-444455556666", Name: "Ann"}
	stranger := signaltest.User{Number: "+15550009999", UUID: "dddddddd-1111-4222-8333-444455556666"}
	base := startTestGateway(t, map[string]any{"signal": map[string]any{
		"enabled": true, "account": signaltest.Account, "httpUrl": fake.URL, "allowFrom": []string{ann.Number},
	}}, llm)

	fake.Emit(signaltest.Message{From: stranger, Text: "let me in"})
	fake.Emit(signaltest.Message{From: ann, Text: "when is the meeting?"})
	waitfor.Within(t, "the answer to ann", 30*time.Second, func() bool {
		for _, s := range fake.Sent() {
			if s.Recipient == ann.Number && s.Text == "The meeting is at three." {
				return true
			}
		}
		return false
	})
	waitfor.Within(t, "the stranger denied", 10*time.Second, func() bool { return inboundCount(t, base, "signal", "denied") == 1 })
	if n := inboundCount(t, base, "signal", "accepted"); n != 1 {
		t.Errorf("%d messages accepted, want only ann's", n)
	}
	if n := len(llm.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1: the stranger must not reach the model", n)
	}
	for _, s := range fake.Sent() {
		if s.Recipient == stranger.Number && !containsPairing(s.Text) {
			t.Errorf("the stranger got %q", s.Text)
		}
	}
	if v := fake.Violations(); len(v) > 0 {
		t.Errorf("protocol violations: %v", v)
	}
}
