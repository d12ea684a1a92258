package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/oggopus"
	"github.com/nanobot-go/nanobot/internal/waitfor"

	"github.com/nanobot-go/nanobot/channels/discord/discordtest"
	"github.com/nanobot-go/nanobot/channels/feishu/feishutest"
	"github.com/nanobot-go/nanobot/channels/slack/slacktest"
	"github.com/nanobot-go/nanobot/providers/providertest"
	"github.com/nanobot-go/nanobot/providers/tts/ttstest"
)

// With /voice on, the real gateway speaks answers on Discord (a voice
// message), Slack (an audio file in the conversation) and Feishu (an audio
// message), each after the text answer, and each platform fake receives a
// valid Ogg/Opus file in the shape it requires.
func TestVoiceRepliesOnMoreChannels(t *testing.T) {
	dc, sl, fs := discordtest.New(t), slacktest.New(t), feishutest.New(t)
	speech := ttstest.New(t)
	llm := providertest.New(t)
	llm.Handle(func(providertest.Request) providertest.Reply { return providertest.Reply{Text: "Spoken answer."} })

	body, _ := json.Marshal(map[string]any{
		"agents": map[string]any{"defaults": map[string]any{"model": "test-model"}},
		"channels": map[string]any{"sendProgress": false, "sendToolHints": false,
			"discord": map[string]any{"enabled": true, "token": discordtest.Token, "apiBase": dc.URL, "allowFrom": []string{"*"}},
			"slack":   map[string]any{"enabled": true, "appToken": slacktest.AppToken, "botToken": slacktest.BotToken, "apiBase": sl.APIBase(), "allowFrom": []string{"*"}},
			"feishu":  map[string]any{"enabled": true, "appId": feishutest.AppID, "appSecret": feishutest.AppSecret, "apiBase": fs.URL, "allowFrom": []string{"*"}},
		},
		"providers": map[string]any{"openai": map[string]any{"apiKey": "sk-speech-0123456789", "apiBase": speech.APIBase()}},
		"tts":       map[string]any{"enabled": true},
		"gateway":   map[string]any{"heartbeat": map[string]any{"enabled": false}},
	})
	runSpeakingGateway(t, filepath.Join(t.TempDir(), "config.json"), body, llm)
	waitfor.Within(t, "feishu's long connection", 20*time.Second, fs.Connected)

	checkOpus := func(t *testing.T, data []byte) {
		t.Helper()
		if info, err := oggopus.Check(data); err != nil || info.Samples <= 0 {
			t.Errorf("the audio is not a valid Ogg/Opus file: %+v %v", info, err)
		}
	}

	t.Run("discord", func(t *testing.T) {
		user := discordtest.User{ID: "4242", Username: "ann"}
		dc.Send(discordtest.Msg{From: user, ChannelID: "D4242", Content: "/voice on"})
		dc.Send(discordtest.Msg{From: user, ChannelID: "D4242", Content: "say something"})
		var voice *discordtest.Sent
		textAt := -1
		waitfor.Within(t, "the discord voice message", 30*time.Second, func() bool {
			for i, s := range dc.Sent() {
				if s.ChannelID == "D4242" && s.Flags == 1<<13 {
					voice = &s
					return true
				}
				if s.ChannelID == "D4242" && strings.Contains(s.Content, "Spoken answer.") && textAt < 0 {
					textAt = i
				}
			}
			return false
		})
		if textAt < 0 {
			t.Error("the voice message came before the text answer")
		}
		if len(voice.Files) != 1 || voice.Files[0].ContentType != "audio/ogg" || len(voice.Attachments) != 1 || voice.Attachments[0].DurationSecs <= 0 {
			t.Fatalf("voice message %+v", voice)
		}
		checkOpus(t, voice.Files[0].Data)
	})

	t.Run("slack", func(t *testing.T) {
		sl.Push(slacktest.Event{Channel: "D4242", ChannelType: "im", User: "U4242", Text: "/voice on"})
		sl.Push(slacktest.Event{Channel: "D4242", ChannelType: "im", User: "U4242", Text: "say something"})
		// A file is listed from files.getUploadURLExternal on; it is whole
		// once files.completeUploadExternal gave it its channel.
		waitfor.Within(t, "the slack audio upload", 30*time.Second, func() bool {
			f := sl.Files()
			return len(f) == 1 && f[0].Channel != ""
		})
		f := sl.Files()[0]
		if f.Channel != "D4242" || !strings.HasSuffix(f.Name, ".ogg") || !strings.HasPrefix(f.Title, "Voice reply") {
			t.Errorf("upload %+v", f)
		}
		var text bool
		for _, s := range sl.Sent() {
			text = text || s.Channel == "D4242" && strings.Contains(s.Rendered, "Spoken answer.")
		}
		if !text {
			t.Error("no text answer beside the audio")
		}
		checkOpus(t, f.Data)
	})

	t.Run("feishu", func(t *testing.T) {
		fs.Push(feishutest.Message{From: "ou_ann", Text: "/voice on"})
		fs.Push(feishutest.Message{From: "ou_ann", Text: "say something"})
		waitfor.Within(t, "the feishu audio message", 30*time.Second, func() bool {
			for _, s := range fs.Sent() {
				if s.MsgType == "audio" {
					return true
				}
			}
			return false
		})
		ups := fs.Uploads()
		if len(ups) != 1 || ups[0].FileType != "opus" || ups[0].Duration == "" {
			t.Fatalf("uploads %+v", ups)
		}
		checkOpus(t, ups[0].Data)
	})

	if n := len(speech.Requests()); n != 3 {
		t.Errorf("%d speech calls, want one per channel", n)
	}
}
