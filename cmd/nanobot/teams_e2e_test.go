package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/teams/teamstest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestTeamsEndToEnd: the Bot Connector posts a signed activity to the
// gateway's own HTTP server; the message goes through the whole gateway and
// the answer is posted to the Connector as a reply and streamed by editing
// it. A forged token is refused with 401 and a stranger's message never
// reaches the model (it gets a pairing code).
func TestTeamsEndToEnd(t *testing.T) {
	fake := teamstest.New(t)
	llm := providertest.New(t)
	llm.Handle(func(providertest.Request) providertest.Reply {
		return providertest.Reply{Text: scriptedAnswer, Chunks: 12, EventDelay: 200 * time.Millisecond}
	})
	const ann, stranger = "29:1ann", "29:1stranger"
	base := startTestGateway(t, map[string]any{"teams": map[string]any{
		"enabled": true, "appId": teamstest.AppID, "appPassword": teamstest.AppPassword, "tenantId": teamstest.TenantID,
		"openIdMetadataUrl": fake.MetadataURL(), "loginUrl": fake.LoginURL(), "allowFrom": []string{"aad-ann"},
	}}, llm)
	fake.WebhookURL = base + "/teams/messages"
	waitfor.Within(t, "the Teams channel ready", 20*time.Second, func() bool {
		body, _, _ := fake.Activity(teamstest.Message{From: ann, AAD: "aad-ann", Text: ""})
		return fake.Post(body, fake.Token(teamstest.Claims{})) == http.StatusOK
	})

	forged, _, _ := fake.Activity(teamstest.Message{From: ann, AAD: "aad-ann", Text: "forged"})
	if code := fake.Post(forged, fake.Token(teamstest.Claims{Key: teamstest.NewKey(t)})); code != http.StatusUnauthorized {
		t.Errorf("forged token: HTTP %d, want 401", code)
	}
	strangerConv, _ := fake.Emit(teamstest.Message{From: stranger, AAD: "aad-stranger", Text: "let me in"})
	annConv, annMsg := fake.Emit(teamstest.Message{From: ann, AAD: "aad-ann", Text: "hello there"})
	shown := func(conv string) (texts []string, edits int, replyTo string) {
		latest := map[string]string{}
		var order []string
		for _, s := range fake.Sent() {
			if s.Conversation != conv || s.Type != "message" {
				continue
			}
			if s.Edit {
				edits++
			} else {
				order = append(order, s.ActivityID)
				replyTo = s.ReplyToID
			}
			latest[s.ActivityID] = s.Text
		}
		for _, id := range order {
			texts = append(texts, latest[id])
		}
		return texts, edits, replyTo
	}
	waitfor.Within(t, "the streamed answer to ann", 30*time.Second, func() bool {
		texts, _, _ := shown(annConv)
		return len(texts) == 1 && texts[0] == scriptedAnswer
	})
	if _, edits, replyTo := shown(annConv); edits == 0 || replyTo != annMsg {
		t.Errorf("%d edits, reply to %q; want the answer streamed as a reply to %s", edits, replyTo, annMsg)
	}
	waitfor.Within(t, "a pairing code for the stranger", 10*time.Second, func() bool {
		texts, _, _ := shown(strangerConv)
		return len(texts) == 1 && strings.Contains(texts[0], "pairing code")
	})
	waitfor.Within(t, "the stranger denied", 10*time.Second, func() bool { return inboundCount(t, base, "teams", "denied") == 1 })
	if n := len(llm.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1: the stranger and the forger must not reach the model", n)
	}
	if v := fake.Violations(); len(v) > 0 {
		t.Errorf("protocol violations: %v", v)
	}
}
