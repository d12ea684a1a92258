package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/feishu/feishutest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestFeishuEndToEnd: the real gateway with the Feishu adapter against the
// local Feishu fake and a scripted model. Ann's direct message gets the
// scripted answer streamed into a CardKit card in her chat; a stranger
// (not in allowFrom) who @mentions the bot in a group gets nothing, and in
// a direct chat at most the gateway's pairing code: neither reaches the
// model.
func TestFeishuEndToEnd(t *testing.T) {
	fake := feishutest.New(t)
	llm := providertest.New(t)
	llm.Handle(func(providertest.Request) providertest.Reply {
		return providertest.Reply{Text: scriptedAnswer, Chunks: 12, EventDelay: 150 * time.Millisecond}
	})
	base := startTestGateway(t, map[string]any{"feishu": map[string]any{
		"enabled": true, "appId": feishutest.AppID, "appSecret": feishutest.AppSecret,
		"apiBase": fake.URL, "allowFrom": []string{"ou_ann"},
	}}, llm)
	waitfor.Within(t, "the long connection", 20*time.Second, fake.Connected)

	mention := []feishutest.Mention{{Key: "@_user_1", OpenID: feishutest.BotOpenID, Name: feishutest.BotName}}
	group := fake.Push(feishutest.Message{From: "ou_stranger", ChatID: "oc_group", ChatType: "group", Text: "@_user_1 answer me", Mentions: mention})
	dm := fake.Push(feishutest.Message{From: "ou_stranger", Text: "let me in"})
	ann := fake.Push(feishutest.Message{From: "ou_ann", Text: "hello there"})

	var cardMsg string
	waitfor.Within(t, "the streamed answer in Ann's chat", 30*time.Second, func() bool {
		for _, s := range fake.Sent() {
			if s.ChatID == ann.ChatID && s.MsgType == "interactive" && !s.Edit {
				cardMsg = s.MessageID
			}
		}
		c := fake.CardOf(cardMsg)
		return c != nil && c.Content == scriptedAnswer
	})
	if c := fake.CardOf(cardMsg); c.Updates == 0 {
		t.Errorf("the answer arrived without card updates; want it streamed")
	}
	waitfor.Within(t, "the strangers' events to be acknowledged", 10*time.Second, func() bool {
		return fake.Acked(group.FrameID) && fake.Acked(dm.FrameID) && fake.Acked(ann.FrameID)
	})
	// Both of the stranger's messages were turned away at the gate and only
	// Ann's got in: no turn for the stranger can still be on its way.
	waitfor.Within(t, "the stranger's two messages denied", 10*time.Second, func() bool { return inboundCount(t, base, "feishu", "denied") == 2 })
	if n := inboundCount(t, base, "feishu", "accepted"); n != 1 {
		t.Errorf("%d messages accepted, want only Ann's", n)
	}
	if n := len(llm.Requests()); n != 1 {
		t.Errorf("%d model requests; the stranger must not reach the model", n)
	}
	for _, s := range fake.Sent() {
		switch s.ChatID {
		case ann.ChatID:
		case dm.ChatID:
			if strings.Contains(s.Text, scriptedAnswer) || !strings.Contains(s.Text, "pairing code") {
				t.Errorf("the stranger's direct chat got %q, want at most a pairing code", s.Text)
			}
		default:
			t.Errorf("message to chat %s: %q", s.ChatID, s.Text)
		}
	}
	for _, v := range fake.Violations() {
		t.Errorf("protocol violation: %s", v)
	}
}
