package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/weixin/weixintest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestWeixinEndToEnd: a WeChat message goes through the whole gateway (ilink
// long poll -> adapter -> gate -> agent -> scripted model -> dispatcher ->
// sendmessage) and the answer goes back to the same user with the user's
// context token. A stranger never reaches the model.
func TestWeixinEndToEnd(t *testing.T) {
	fake := weixintest.New(t)
	llm := providertest.New(t)
	llm.Handle(func(providertest.Request) providertest.Reply {
		return providertest.Reply{Text: "**记得**带伞，明天有雨。"}
	})
	startTestGateway(t, map[string]any{"weixin": map[string]any{
		"enabled": true, "token": weixintest.Token, "baseUrl": fake.URL, "cdnBaseUrl": fake.URL,
		"allowFrom": []string{"ann@im.wechat"},
	}}, llm)

	fake.Emit("stranger@im.wechat", "你好")
	id := fake.Emit("ann@im.wechat", "明天要带伞吗？")
	waitfor.Within(t, "the answer to ann", 30*time.Second, func() bool {
		for _, s := range fake.Sent() {
			if s.To == "ann@im.wechat" {
				return true
			}
		}
		return false
	})
	waitfor.Within(t, "the cursor past ann's message", 10*time.Second, func() bool { return fake.Acked(id) })
	for _, s := range fake.Sent() {
		switch s.To {
		case "ann@im.wechat":
			if s.Text != "记得带伞，明天有雨。" {
				t.Errorf("answer %q, want the scripted text without Markdown marks", s.Text)
			}
		case "stranger@im.wechat":
			if !strings.Contains(s.Text, "pairing code") {
				t.Errorf("the stranger got %q", s.Text)
			}
		default:
			t.Errorf("unexpected message %+v", s)
		}
	}
	if n := len(llm.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1: the stranger must not reach the model", n)
	}
	if v := fake.Violations(); len(v) > 0 {
		t.Errorf("protocol violations: %v", v)
	}
}
