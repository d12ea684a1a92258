package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/line/linetest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// containsPairing tells the gate's pairing-code message apart from an
// answer of the model.
func containsPairing(text string) bool { return strings.Contains(text, "pairing code") }

// TestLINEEndToEnd: LINE posts a signed webhook to the gateway's own HTTP
// server; the message goes through the whole gateway and the answer goes
// back with the message's reply token. A stranger's message never reaches
// the model.
func TestLINEEndToEnd(t *testing.T) {
	fake := linetest.New(t)
	llm := providertest.New(t)
	llm.Handle(func(providertest.Request) providertest.Reply {
		return providertest.Reply{Text: "Your order ships _tomorrow_."}
	})
	const ann, stranger = "U4242424242424242424242424242a4n", "U9999999999999999999999999999zzz"
	base := startTestGateway(t, map[string]any{"line": map[string]any{
		"enabled": true, "channelSecret": linetest.Secret, "channelAccessToken": linetest.Token,
		"apiBase": fake.URL, "dataApiBase": fake.URL, "allowFrom": []string{ann},
	}}, llm)
	fake.WebhookURL = base + "/line/webhook"
	waitfor.Within(t, "the LINE channel connected", 20*time.Second, func() bool {
		// The webhook answers 503 until the channel runs.
		return fake.Post([]byte(`{"destination":"x","events":[]}`), linetest.Sign(linetest.Secret, []byte(`{"destination":"x","events":[]}`))) == 200
	})

	_, strangerMsg := fake.Emit(linetest.Message{From: stranger, Text: "let me in"})
	_, annMsg := fake.Emit(linetest.Message{From: ann, Text: "where is my order?"})
	waitfor.Within(t, "the answer to ann", 30*time.Second, func() bool {
		for _, s := range fake.Sent() {
			if s.ChatID == ann && s.Text == "Your order ships tomorrow." {
				return true
			}
		}
		return false
	})
	for _, s := range fake.Sent() {
		if s.ChatID == ann && !s.Reply {
			t.Errorf("the answer was pushed, want it sent with the reply token: %+v", s)
		}
		if s.ChatID == stranger && !containsPairing(s.Text) {
			t.Errorf("the stranger got %q", s.Text)
		}
	}
	waitfor.Within(t, "the stranger denied", 10*time.Second, func() bool { return inboundCount(t, base, "line", "denied") == 1 })
	if n := inboundCount(t, base, "line", "accepted"); n != 1 {
		t.Errorf("%d messages accepted, want only ann's", n)
	}
	if n := len(llm.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1: the stranger must not reach the model", n)
	}
	// The fake records a webhook's answer when it has read it, which may
	// be after the gateway counted the message.
	waitfor.Within(t, "both webhooks answered", 10*time.Second, func() bool { return fake.Acked(strangerMsg) != 0 && fake.Acked(annMsg) != 0 })
	if fake.Acked(strangerMsg) != 200 || fake.Acked(annMsg) != 200 {
		t.Errorf("webhook answers %d and %d, want 200", fake.Acked(strangerMsg), fake.Acked(annMsg))
	}
	if v := fake.Violations(); len(v) > 0 {
		t.Errorf("protocol violations: %v", v)
	}
}
