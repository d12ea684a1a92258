package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/qq/qqtest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestQQEndToEnd: a QQ single-chat message from an allowed user goes
// through the whole gateway (QQ fake gateway websocket -> adapter -> gate
// -> agent -> scripted model -> dispatcher -> REST v2) and the answer comes
// back in the same chat as a passive reply to that message. A stranger's
// group @-message gets nothing, and a stranger's direct message gets at
// most the gateway's pairing code; neither reaches the model.
func TestQQEndToEnd(t *testing.T) {
	const (
		ann      = "A1B2C3D4E5F6A7B8C9D0E1F2A3B4C5D6"
		stranger = "FFEEDDCCBBAA99887766554433221100"
		group    = "0123456789ABCDEF0123456789ABCDEF"
		answer   = "明天北京晴，最高 12°C。"
	)
	fake := qqtest.New(t)
	llm := providertest.New(t)
	llm.Handle(func(providertest.Request) providertest.Reply { return providertest.Reply{Text: answer} })
	startTestGateway(t, map[string]any{"qq": map[string]any{
		"enabled": true, "appId": qqtest.AppID, "secret": qqtest.Secret,
		"apiBase": fake.URL, "authBase": fake.URL, "allowFrom": []string{ann},
	}}, llm)

	fake.Send(qqtest.Msg{Kind: qqtest.Group, From: stranger, Chat: group, Content: " what's the weather?"})
	fake.Send(qqtest.Msg{Kind: qqtest.C2C, From: stranger, Content: "let me in"})
	id := fake.Send(qqtest.Msg{Kind: qqtest.C2C, From: ann, Content: "明天北京天气怎么样？"})
	waitfor.Within(t, "the answer in ann's chat", 30*time.Second, func() bool {
		for _, s := range fake.Sent() {
			if s.Target == ann {
				return true
			}
		}
		return false
	})
	waitfor.Within(t, "the handled messages reported to the platform", 30*time.Second, func() bool { return fake.Acked(id) })
	for _, s := range fake.Sent() {
		switch {
		case s.Target == ann:
			if s.Kind != "users" || s.Content != answer || s.MsgID != id || s.MsgSeq != 1 {
				t.Errorf("reply %+v, want the scripted answer as passive reply 1 to %s", s, id)
			}
		case s.Target == stranger:
			if !strings.Contains(s.Content, "pairing code") {
				t.Errorf("the stranger got %q", s.Content)
			}
		default:
			t.Errorf("unexpected message %+v", s)
		}
	}
	if n := len(llm.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1: strangers must not reach the model", n)
	}
	if v := fake.Violations(); len(v) > 0 {
		t.Errorf("protocol violations: %v", v)
	}
}
