package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/oggopus"
	"github.com/nanobot-go/nanobot/internal/waitfor"

	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/openai"
	"github.com/nanobot-go/nanobot/providers/providertest"
	"github.com/nanobot-go/nanobot/providers/tts/ttstest"
)

// A Telegram voice note is transcribed, answered in text, and the answer
// is spoken: the fake Bot API receives sendVoice with an Ogg/Opus file
// that passes the page-by-page check. A typed message gets text only,
// until /voice on.
func TestVoiceNoteGetsVoiceAnswer(t *testing.T) {
	tg := telegramtest.New(t)
	speech := ttstest.New(t)
	llm := providertest.New(t)
	llm.Handle(func(r providertest.Request) providertest.Reply {
		return providertest.Reply{Text: "It is **sunny** today."}
	})
	var transcribed atomic.Int32
	stt := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		transcribed.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		_ = json.NewEncoder(w).Encode(map[string]string{"text": "what is the weather"})
	}))
	t.Cleanup(stt.Close)

	dir := t.TempDir()
	body, _ := json.Marshal(map[string]any{
		"agents": map[string]any{"defaults": map[string]any{"model": "test-model"}},
		"channels": map[string]any{"sendProgress": false, "sendToolHints": false,
			"telegram": map[string]any{"enabled": true, "token": telegramtest.Token, "apiBase": tg.URL, "allowFrom": []string{"*"},
				"transcription": map[string]any{"apiBase": stt.URL + "/v1"}}},
		"providers": map[string]any{"openai": map[string]any{"apiKey": "sk-speech-0123456789", "apiBase": speech.APIBase()}},
		"tts":       map[string]any{"enabled": true, "model": "gpt-4o-mini-tts", "voice": "nova"},
		"gateway":   map[string]any{"heartbeat": map[string]any{"enabled": false}},
	})
	paths := runSpeakingGateway(t, filepath.Join(dir, "config.json"), body, llm)

	ann := telegramtest.User{ID: 4242, Username: "ann", FirstName: "Ann"}
	chat := telegramtest.Chat{ID: ann.ID, Type: "private"}
	methods := func(method string) []telegramtest.Sent {
		var out []telegramtest.Sent
		for _, s := range tg.Sent() {
			if s.Method == method {
				out = append(out, s)
			}
		}
		return out
	}
	texts := func() []string {
		var out []string
		for _, s := range methods("sendMessage") {
			out = append(out, s.Visible)
		}
		return out
	}

	// 1. A voice note: text answer, then the voice answer.
	tg.Send(telegramtest.Msg{From: ann, Chat: chat, Voice: tg.AddFile("note.oga", ttstest.Opus, 0)})
	waitfor.Within(t, "the voice answer", 30*time.Second, func() bool { return len(methods("sendVoice")) == 1 })
	if transcribed.Load() != 1 {
		t.Errorf("transcription calls = %d, want 1", transcribed.Load())
	}
	if got := llm.Requests()[0].Messages(); !strings.Contains(lastContent(got), "what is the weather") {
		t.Errorf("the model did not get the transcription: %v", got)
	}
	sent := tg.Sent()
	var textAt, voiceAt = -1, -1
	for i, s := range sent {
		switch {
		case s.Method == "sendMessage" && strings.Contains(s.Visible, "It is sunny today."):
			textAt = i
		case s.Method == "sendVoice":
			voiceAt = i
		}
	}
	if textAt < 0 || voiceAt < textAt {
		t.Fatalf("want the text answer, then the voice: %+v", sent)
	}
	up := sent[voiceAt].Upload
	if up == nil || up.Field != "voice" || !strings.HasSuffix(up.Name, ".ogg") {
		t.Fatalf("sendVoice upload = %+v, want a .ogg file in the voice field", up)
	}
	info, err := oggopus.Check(up.Data)
	if err != nil {
		t.Fatalf("the voice message is not a valid Ogg/Opus file: %v", err)
	}
	if info.Channels != 1 || info.Samples <= 0 {
		t.Errorf("Ogg/Opus info = %+v", info)
	}
	reqs := speech.Requests()
	if len(reqs) != 1 || reqs[0].Body["input"] != "It is sunny today." || reqs[0].Body["response_format"] != "opus" ||
		reqs[0].Body["voice"] != "nova" || reqs[0].Authorization != "Bearer sk-speech-0123456789" {
		t.Errorf("speech requests = %+v", reqs)
	}
	files, _ := filepath.Glob(filepath.Join(paths.Media, "voice-*.ogg"))
	if len(files) != 1 {
		t.Fatalf("voice files in the media folder: %v", files)
	}
	if st, err := os.Stat(files[0]); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("voice file mode: %v %v, want 0600", st.Mode().Perm(), err)
	}

	// 2. Typed text gets text only. The /voice answer after it is the
	// positive event: the session answers in order, so any voice for the
	// typed message would have been sent before it.
	tg.Send(telegramtest.Msg{From: ann, Chat: chat, Text: "and tomorrow?"})
	tg.Send(telegramtest.Msg{From: ann, Chat: chat, Text: "/voice"})
	waitfor.Within(t, "the /voice answer", 30*time.Second, func() bool {
		ts := texts()
		return len(ts) > 0 && strings.Contains(ts[len(ts)-1], "Voice replies are off")
	})
	if n := len(methods("sendVoice")); n != 1 {
		t.Errorf("a typed message was answered with voice (%d voice messages)", n)
	}

	// 3. /voice on: typed messages are spoken too.
	tg.Send(telegramtest.Msg{From: ann, Chat: chat, Text: "/voice on"})
	tg.Send(telegramtest.Msg{From: ann, Chat: chat, Text: "and the day after?"})
	waitfor.Within(t, "the voice answer to a typed message", 30*time.Second, func() bool { return len(methods("sendVoice")) == 2 })
}

func lastContent(msgs []map[string]any) string {
	if len(msgs) == 0 {
		return ""
	}
	s, _ := msgs[len(msgs)-1]["content"].(string)
	return s
}

// runSpeakingGateway writes body as the config at path and runs the real
// gateway on it, with the speaker the CLI builds from its tts section and
// the OpenAI backend pointed at llm; it stops when the test ends. It
// returns the instance's paths.
func runSpeakingGateway(t *testing.T, path string, body []byte, llm *providertest.Server) configs.Paths {
	t.Helper()
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := configs.Load(configs.Options{Path: path, Environ: []string{}, Platforms: platformTypes()})
	if err != nil {
		t.Fatal(err)
	}
	speaker, err := buildSpeaker(&loaded.Config, loaded.Paths, nil)
	if err != nil || speaker == nil {
		t.Fatalf("buildSpeaker = %v, %v", speaker, err)
	}
	provider, err := openai.New(openai.Options{Endpoint: providers.Endpoint{APIBase: llm.OpenAIBase()}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- gateway.Run(ctx, gateway.Options{
			Config: &loaded.Config, Paths: loaded.Paths, Provider: provider, Model: "test-model", Speaker: speaker,
			Transcription: buildTranscription(&loaded.Config, slog.New(slog.DiscardHandler)),
			Channels:      newChannelRegistry(), Listener: ln, DrainTimeout: 2 * time.Second, Stderr: io.Discard, Log: slog.New(slog.DiscardHandler),
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("gateway: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("gateway did not stop")
		}
	})
	return loaded.Paths
}
