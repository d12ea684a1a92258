package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/discord/discordtest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
	"github.com/nanobot-go/nanobot/providers/stt/stttest"
	"github.com/nanobot-go/nanobot/providers/tts/ttstest"
)

// TestVoiceNoteOnDiscordIsTranscribed runs the gateway binary with the
// top-level transcription section naming Xiaomi MiMo by its alias: a
// Discord voice message reaches the fake MiMo ASR API as a chat completion
// with the audio, and the model gets the transcript with the file still
// attached. A failing service leaves the next voice note untranscribed but
// answered.
func TestVoiceNoteOnDiscordIsTranscribed(t *testing.T) {
	const key = "mimo-key-0123456789abcdef"
	asr := stttest.New(t)
	asr.SetKey(key)
	asr.SetText("turn the lights off")
	llm := providertest.New(t)
	llm.Handle(func(providertest.Request) providertest.Reply { return providertest.Reply{Text: "Done."} })
	dc := discordtest.New(t)

	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	body := fmt.Sprintf(`{
	  "agents": {"defaults": {"model": "test-model", "provider": "vllm"}},
	  "providers": {"vllm": {"apiBase": %q, "apiKey": "k"}, "xiaomi_mimo": {"apiBase": %q, "apiKey": %q}},
	  "transcription": {"provider": "mimo", "language": "en"},
	  "channels": {"sendProgress": false, "sendToolHints": false,
	    "discord": {"enabled": true, "token": %q, "apiBase": %q, "allowFrom": ["4242"]}},
	  "gateway": {"port": %d, "heartbeat": {"enabled": false}}
	}`, llm.OpenAIBase(), asr.URL+"/v1", key, discordtest.Token, dc.URL, freePort(t))
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	g := launchGateway(t, cfg)

	ann := discordtest.User{ID: "4242", Username: "ann"}
	voiceNote := func() {
		dc.Send(discordtest.Msg{From: ann, ChannelID: "D4242", Attachments: []discordtest.File{
			{Name: "voice-message.ogg", ContentType: "audio/ogg", Data: ttstest.Opus}}})
	}
	answers := func() int {
		n := 0
		for _, s := range dc.Sent() {
			if s.ChannelID == "D4242" && strings.Contains(s.Content, "Done.") {
				n++
			}
		}
		return n
	}
	voiceNote()
	waitfor.Within(t, "the answer to the voice note", 60*time.Second, func() bool { return answers() == 1 })

	reqs := asr.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests to the speech service, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer "+key ||
		r.JSON["model"] != "mimo-v2.5-asr" || string(r.Audio) != string(ttstest.Opus) {
		t.Errorf("speech request %s %s model %v, %d bytes of audio", r.Method, r.Path, r.JSON["model"], len(r.Audio))
	}
	if opts, _ := r.JSON["asr_options"].(map[string]any); opts["language"] != "en" {
		t.Errorf("asr_options = %v, want the language hint", r.JSON["asr_options"])
	}
	user := lastContent(llm.Requests()[0].Messages())
	if !strings.Contains(user, "[voice transcription] turn the lights off") {
		t.Errorf("the model did not get the transcript:\n%s", user)
	}
	if !strings.Contains(user, "[attachment: ") || !strings.Contains(user, "(audio/ogg)]") {
		t.Errorf("the audio is no longer attached:\n%s", user)
	}

	// The service fails for good: the voice note is still answered.
	asr.Fail(1, http.StatusBadRequest, `{"error":{"message":"unsupported audio format"}}`)
	voiceNote()
	waitfor.Within(t, "the answer to the second voice note", 60*time.Second, func() bool { return answers() == 2 })
	if user := lastContent(llm.Requests()[1].Messages()); strings.Contains(user, "[voice transcription]") {
		t.Errorf("a failed transcription gave a transcript:\n%s", user)
	}
	waitfor.Within(t, "the warning in the log", 10*time.Second, func() bool {
		return strings.Contains(g.logs.String(), "transcription failed") && strings.Contains(g.logs.String(), "unsupported audio format")
	})
	if strings.Contains(g.logs.String(), key) {
		t.Error("the speech service's key is in the gateway's log")
	}
}
