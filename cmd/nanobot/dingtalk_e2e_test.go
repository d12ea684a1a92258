package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/dingtalk/dingtalktest"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestDingTalkEndToEnd: a bot message delivered over the fake's stream
// websocket goes through the whole gateway to the scripted model, and the
// answer is sent back to the same user through oToMessages/batchSend; the
// frame is acknowledged. A stranger @-mentioning the bot in a group (where
// no pairing code is offered) is acknowledged too but never reaches the
// model and gets no answer.
func TestDingTalkEndToEnd(t *testing.T) {
	fake := dingtalktest.New(t)
	llm := providertest.New(t)
	llm.Handle(func(providertest.Request) providertest.Reply {
		return providertest.Reply{Text: "The meeting room is 3F-B."}
	})
	ann := dingtalktest.User{StaffID: "ann001", Nick: "Ann"}
	stranger := dingtalktest.User{StaffID: "stranger9", Nick: "Stranger"}
	startTestGateway(t, map[string]any{"dingtalk": map[string]any{
		"enabled": true, "allowFrom": []string{ann.StaffID},
		"clientId": dingtalktest.ClientID, "clientSecret": dingtalktest.ClientSecret,
		"apiBase": fake.URL, "oapiBase": fake.URL,
	}}, llm)

	strangerFrame, _ := fake.Deliver(dingtalktest.Msg{From: stranger, ConversationID: "cidGroup", Group: true, AtBot: true, Text: "let me in"})
	annFrame, _ := fake.Deliver(dingtalktest.Msg{From: ann, ConversationID: "cidA", Text: "Which room is the meeting in?"})
	waitUntil(t, "the answer", 30*time.Second, func() bool { return len(fake.Sent()) > 0 })
	out := fake.Sent()[0]
	if out.Chat != ann.StaffID || out.Group || !strings.Contains(out.Text, "The meeting room is 3F-B.") {
		t.Errorf("reply %+v", out)
	}
	waitUntil(t, "both frames acknowledged", 10*time.Second, func() bool {
		return fake.Acked(annFrame) == 200 && fake.Acked(strangerFrame) == 200
	})
	if n := len(llm.Requests()); n != 1 {
		t.Errorf("%d model requests; the stranger's message must not reach the model", n)
	}
	if n := len(fake.Sent()); n != 1 {
		t.Errorf("%d messages sent, want only the answer to Ann: %+v", n, fake.Sent())
	}
}
