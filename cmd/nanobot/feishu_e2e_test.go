package main

import (
	"encoding/json"
	"os"
	"path/filepath"
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

// TestFeishuLoginThenTheBotAnswers: the bot `channels login feishu`
// created by QR code is the one the gateway then runs: the app id and
// secret the login saved get a tenant token and the long connection from
// (the fake) Feishu, and Ann's message an answer.
func TestFeishuLoginThenTheBotAnswers(t *testing.T) {
	useFeishuRegistration(t, feishutest.AppID, feishutest.AppSecret)
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := run(t, "channels", "login", "feishu", "--config", cfg); err != nil {
		t.Fatalf("login: %v\n%s%s", err, out, errOut)
	}
	var saved struct {
		Channels map[string]map[string]any `json:"channels"`
	}
	if b, err := os.ReadFile(cfg); err != nil || json.Unmarshal(b, &saved) != nil {
		t.Fatalf("read the saved config: %v", err)
	}
	bot := saved.Channels["feishu"]
	if bot["enabled"] != true || bot["appId"] != feishutest.AppID {
		t.Fatalf("the login saved channels.feishu %v", bot)
	}
	fake := feishutest.New(t)
	llm := providertest.New(t)
	llm.Push(providertest.Reply{Text: "hello from the bot the QR code made"})
	// The fake stands where open.feishu.cn would; Ann is the owner.
	bot["apiBase"], bot["allowFrom"] = fake.URL, []string{"ou_ann"}
	startTestGateway(t, map[string]any{"feishu": bot}, llm)
	waitfor.Within(t, "the long connection", 20*time.Second, fake.Connected)
	ann := fake.Push(feishutest.Message{From: "ou_ann", Text: "are you there?"})
	waitfor.Within(t, "the answer in Ann's chat", 30*time.Second, func() bool {
		for _, s := range fake.Sent() {
			if s.ChatID != ann.ChatID {
				continue
			}
			if c := fake.CardOf(s.MessageID); strings.Contains(s.Text, "QR code made") || (c != nil && strings.Contains(c.Content, "QR code made")) {
				return true
			}
		}
		return false
	})
	for _, v := range fake.Violations() {
		t.Errorf("protocol violation: %s", v)
	}
}
