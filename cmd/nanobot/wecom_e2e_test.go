package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/wecom/wecomtest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestWeComEndToEnd: a single-chat message goes through the whole gateway
// (websocket callback -> adapter -> gate -> agent -> scripted model ->
// dispatcher) and the answer streams back on the message's req_id, ending
// with a finished frame carrying the whole answer. A stranger's message
// never reaches the model.
func TestWeComEndToEnd(t *testing.T) {
	fake := wecomtest.New(t)
	llm := providertest.New(t)
	llm.Handle(func(providertest.Request) providertest.Reply {
		return providertest.Reply{Text: "报销单已经提交，审批人是李经理。"}
	})
	base := startTestGateway(t, map[string]any{"wecom": map[string]any{
		"enabled": true, "botId": wecomtest.BotID, "secret": wecomtest.Secret, "wsUrl": fake.URL,
		"allowFrom": []string{"zhangsan"},
	}}, llm)

	fake.Emit(wecomtest.Message{From: "stranger", Text: "帮我查一下"})
	fake.Emit(wecomtest.Message{From: "zhangsan", Text: "报销单提交了吗？"})
	defer func() { t.Logf("sent: %+v", fake.Sent()) }()
	waitfor.Within(t, "a finished answer to zhangsan", 30*time.Second, func() bool {
		for _, s := range fake.Sent() {
			if s.ChatID == "zhangsan" && s.Finish && strings.Contains(s.Content, "审批人是李经理") {
				return true
			}
		}
		return false
	})
	// The gate has turned the stranger away (so no turn of theirs can
	// still be on its way) and let only zhangsan in.
	waitfor.Within(t, "the stranger denied", 10*time.Second, func() bool { return inboundCount(t, base, "wecom", "denied") == 1 })
	if n := inboundCount(t, base, "wecom", "accepted"); n != 1 {
		t.Errorf("%d messages accepted, want only zhangsan's", n)
	}
	for _, s := range fake.Sent() {
		if s.ChatID != "zhangsan" && !strings.Contains(s.Content, "pairing code") {
			t.Errorf("unexpected frame %+v", s)
		}
	}
	if n := len(llm.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1: the stranger must not reach the model", n)
	}
	if v := fake.Violations(); len(v) > 0 {
		t.Errorf("protocol violations: %v", v)
	}
}
