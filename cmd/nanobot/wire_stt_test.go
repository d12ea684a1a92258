package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/providers/providertest"
	"github.com/nanobot-go/nanobot/providers/stt/stttest"
	"github.com/nanobot-go/nanobot/providers/tts/ttstest"
)

// loadConfig writes body as a config file and loads it as the gateway would.
func loadConfig(t *testing.T, body string) *configs.Config {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := configs.Load(configs.Options{Path: p, Environ: []string{}, Platforms: platformTypes()})
	if err != nil {
		t.Fatal(err)
	}
	return &l.Config
}

// The top-level section serves every channel; Telegram's own object still
// serves Telegram; a section that cannot work serves none.
func TestBuildTranscription(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	service := func(tr interface{ Service() (string, string) }) string {
		if tr == nil {
			return ""
		}
		p, m := tr.Service()
		return p + "/" + m
	}

	c := loadConfig(t, `{"providers": {"silicon": {"apiKey": "sf-0123456789"}}, "transcription": {"provider": "silicon"},
	  "channels": {"telegram": {"token": "1:x", "transcription": {"apiBase": "http://127.0.0.1:9000/v1", "model": "whisper-small"}}}}`)
	got := buildTranscription(c, log)
	if s := service(got.For("discord")); s != "siliconflow/FunAudioLLM/SenseVoiceSmall" {
		t.Errorf("discord: %q", s)
	}
	if s := service(got.For("telegram")); s != "custom/whisper-small" {
		t.Errorf("telegram: %q, want its own endpoint", s)
	}

	c = loadConfig(t, `{"transcription": {"provider": "deepgram"}}`)
	if got := buildTranscription(c, log); got.Transcriber != nil || got.ByChannel != nil {
		t.Errorf("an unknown provider built %+v", got)
	}
	findings := diagnoseTranscription(c)
	if len(findings) != 1 || findings[0].level != "warn" || !strings.Contains(findings[0].text, "known here (groq") {
		t.Errorf("doctor: %+v", findings)
	}
}

// TestTranscriptionThroughTheProvidersProxy: the providers entry's proxy
// carries the transcription requests, as it carries the chat calls.
func TestTranscriptionThroughTheProvidersProxy(t *testing.T) {
	asr := stttest.New(t)
	asr.SetText("hello through the proxy")
	proxy, proxied := providertest.ForwardProxy(t)
	c := loadConfig(t, fmt.Sprintf(`{"providers": {"groq": {"apiKey": "gsk-0123456789", "apiBase": %q, "proxy": %q}},
	  "transcription": {"provider": "groq"}}`, asr.URL+"/v1", proxy.URL))
	tr := buildTranscription(c, slog.New(slog.DiscardHandler)).For("telegram")
	if tr == nil {
		t.Fatal("no transcriber")
	}
	audio := filepath.Join(t.TempDir(), "note.ogg")
	if err := os.WriteFile(audio, ttstest.Opus, 0o600); err != nil {
		t.Fatal(err)
	}
	text, err := tr.Transcribe(t.Context(), audio, "audio/ogg")
	if err != nil || text != "hello through the proxy" {
		t.Fatalf("transcribe: %q, %v", text, err)
	}
	if proxied.Load() == 0 || len(asr.Requests()) != 1 {
		t.Errorf("%d requests through the proxy, %d at the service; want the service reached through the proxy", proxied.Load(), len(asr.Requests()))
	}
}
