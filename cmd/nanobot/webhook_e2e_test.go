package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/webhook"
	"github.com/nanobot-go/nanobot/channels/webhook/webhooktest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestWebhookEndToEnd runs the real gateway with the webhook channel
// mounted on its HTTP server: a sync hook answers in the response, an
// async hook's answer arrives at its replyUrl signed with its secret, and
// neither a forged request nor a sender outside a hook's allowFrom reaches
// the model.
func TestWebhookEndToEnd(t *testing.T) {
	const secret = "e2e-webhook-secret-0123456789"
	recv := webhooktest.NewReceiver(t, secret)
	llm := providertest.New(t)
	llm.Handle(func(providertest.Request) providertest.Reply {
		return providertest.Reply{Text: "The garage door is closed."}
	})
	base := startTestGateway(t, map[string]any{"webhook": map[string]any{
		"enabled": true,
		"hooks": map[string]any{
			"ha": map[string]any{"secret": secret, "sync": true, "syncTimeoutS": 30},
			"ci": map[string]any{"secret": secret, "replyUrl": recv.URL, "allowFrom": []string{"pipeline"}},
		},
	}}, llm)
	// The hooks answer 503 until the channel runs; /readyz says when it does.
	waitfor.Within(t, "the webhook channel running (/readyz 200)", 20*time.Second, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	ha := &webhooktest.Caller{URL: base + "/hooks/ha", Secret: secret}
	ci := &webhooktest.Caller{URL: base + "/hooks/ci", Secret: secret}

	// Forged and stranger requests first: when the genuine ones are
	// answered, these have long been refused.
	forged := &webhooktest.Caller{URL: base + "/hooks/ha", Secret: "not-the-secret-at-all-000"}
	if res := forged.Post(t, webhook.Request{ChatID: "garage", SenderID: "eve", Text: "open the garage"}); res.Status != http.StatusUnauthorized {
		t.Errorf("forged request: %d %s, want 401", res.Status, res.Raw)
	}
	if res := ci.Post(t, webhook.Request{ChatID: "build-1", SenderID: "stranger", Text: "deploy"}); res.Status != http.StatusForbidden {
		t.Errorf("sender outside allowFrom: %d %s, want 403", res.Status, res.Raw)
	}

	res := ha.Post(t, webhook.Request{ChatID: "garage", SenderID: "automation", Text: "is the garage door closed?", ID: "evt-1"})
	if res.Status != http.StatusOK || res.Body.Text != "The garage door is closed." {
		t.Fatalf("sync hook: %d %s", res.Status, res.Raw)
	}

	if res := ci.Post(t, webhook.Request{ChatID: "build-2", SenderID: "pipeline", Text: "summarise the build", ID: "b2"}); res.Status != http.StatusAccepted {
		t.Fatalf("async hook: %d %s, want 202", res.Status, res.Raw)
	}
	waitfor.Within(t, "the signed answer at replyUrl", 30*time.Second, func() bool {
		for _, r := range recv.Got() {
			if r.Verified && r.Reply.ChatID == "build-2" && r.Reply.ReplyTo == "b2" && strings.Contains(r.Reply.Text, "garage door") {
				return true
			}
		}
		return false
	})
	for _, r := range recv.Got() {
		if !r.Verified {
			t.Errorf("reply POST failed verification: %+v", r)
		}
	}
	if n := len(llm.Requests()); n != 2 {
		t.Errorf("%d model requests, want 2: forged and refused requests must not reach the model", n)
	}
	if n := inboundCount(t, base, "webhook", "accepted"); n != 2 {
		t.Errorf("%d webhook messages accepted, want 2", n)
	}
}
