package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/configs"
)

// The top-level section serves every channel; Telegram's own object still
// serves Telegram; a section that cannot work serves none.
func TestBuildTranscription(t *testing.T) {
	load := func(t *testing.T, body string) *configs.Config {
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
	log := slog.New(slog.DiscardHandler)
	service := func(tr interface{ Service() (string, string) }) string {
		if tr == nil {
			return ""
		}
		p, m := tr.Service()
		return p + "/" + m
	}

	c := load(t, `{"providers": {"silicon": {"apiKey": "sf-0123456789"}}, "transcription": {"provider": "silicon"},
	  "channels": {"telegram": {"token": "1:x", "transcription": {"apiBase": "http://127.0.0.1:9000/v1", "model": "whisper-small"}}}}`)
	got := buildTranscription(c, log)
	if s := service(got.For("discord")); s != "siliconflow/FunAudioLLM/SenseVoiceSmall" {
		t.Errorf("discord: %q", s)
	}
	if s := service(got.For("telegram")); s != "custom/whisper-small" {
		t.Errorf("telegram: %q, want its own endpoint", s)
	}

	c = load(t, `{"transcription": {"provider": "deepgram"}}`)
	if got := buildTranscription(c, log); got.Transcriber != nil || got.ByChannel != nil {
		t.Errorf("an unknown provider built %+v", got)
	}
	findings := diagnoseTranscription(c)
	if len(findings) != 1 || findings[0].level != "warn" || !strings.Contains(findings[0].text, "known here (groq") {
		t.Errorf("doctor: %+v", findings)
	}
}
