package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/dingtalk/dingtalktest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestDingTalkEndToEnd: a one-to-one message to the robot goes through the
// whole gateway (stream websocket -> adapter -> gate -> agent -> scripted
// model -> dispatcher -> oToMessages/batchSend) and the answer reaches the
// same user; the frame is acknowledged. A stranger's group @-message gets
// nothing and never reaches the model.
func TestDingTalkEndToEnd(t *testing.T) {
	fake := dingtalktest.New(t)
	llm := providertest.New(t)
	llm.Handle(func(providertest.Request) providertest.Reply {
		return providertest.Reply{Text: "周五下午三点开会。"}
	})
	base := startTestGateway(t, map[string]any{"dingtalk": map[string]any{
		"enabled": true, "clientId": dingtalktest.ClientID, "clientSecret": dingtalktest.ClientSecret,
		"apiBase": fake.URL, "allowFrom": []string{"manager01"},
	}}, llm)

	fake.Send(dingtalktest.Message{From: "stranger9", Group: "cidG1", AtBot: true, Text: "@bot 你好"})
	_, frame := fake.Send(dingtalktest.Message{From: "manager01", Nick: "王经理", Text: "周会是什么时候？"})
	waitfor.Within(t, "the answer to manager01", 30*time.Second, func() bool { return len(fake.Sent()) > 0 })
	waitfor.Within(t, "the frame acknowledged", 10*time.Second, func() bool { code, _, ok := fake.Acked(frame); return ok && code == 200 })
	waitfor.Within(t, "the stranger denied", 10*time.Second, func() bool { return inboundCount(t, base, "dingtalk", "denied") == 1 })
	if n := inboundCount(t, base, "dingtalk", "accepted"); n != 1 {
		t.Errorf("%d messages accepted, want only manager01's", n)
	}
	sent := fake.Sent()
	if len(sent) != 1 || sent[0].To != "manager01" || !strings.Contains(sent[0].Text, "周五下午三点开会") {
		t.Errorf("sent %+v, want one answer to manager01", sent)
	}
	if n := len(llm.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1: the stranger must not reach the model", n)
	}
	if v := fake.Violations(); len(v) > 0 {
		t.Errorf("protocol violations: %v", v)
	}
}
