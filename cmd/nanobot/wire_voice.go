package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/tts"
)

// ttsSpeaker saves spoken answers in the media folder.
type ttsSpeaker struct {
	client *tts.Client
	dir    string
}

func (s ttsSpeaker) Speak(ctx context.Context, text string) (bus.Media, error) {
	path, err := s.client.Speak(ctx, s.dir, text)
	if err != nil {
		return bus.Media{}, err
	}
	return bus.Media{Path: path, MIMEType: "audio/ogg", Name: "voice.ogg"}, nil
}

// buildSpeaker builds the voice-reply speaker of tts.* (nil when tts is
// off). The endpoint and key come from tts.apiBase/apiKey, else from the
// provider tts.provider names (default openai).
func buildSpeaker(c *configs.Config, paths configs.Paths, client *http.Client) (agent.Speaker, error) {
	t := c.TTS
	if !t.Enabled {
		return nil, nil
	}
	cfg, err := ttsConfig(c)
	if err != nil {
		return nil, err
	}
	cfg.HTTPClient = client
	tc, err := tts.New(cfg)
	if err != nil {
		return nil, err
	}
	return ttsSpeaker{client: tc, dir: paths.Media}, nil
}

// ttsConfig resolves tts.* against the providers (also for doctor).
func ttsConfig(c *configs.Config) (tts.Config, error) {
	t := c.TTS
	name := t.Provider
	if name == "" {
		name = "openai"
	}
	cfg := tts.Config{APIBase: t.APIBase, APIKey: t.APIKey, Model: t.Model, Voice: t.Voice, Format: t.Format,
		Instructions: t.Instructions, MaxChars: t.MaxChars}
	spec, known := providers.Lookup(name)
	for key, p := range c.Providers {
		if key == name || known && providerKeyIs(key, spec.Name) {
			if cfg.APIBase == "" {
				cfg.APIBase = p.APIBase
			}
			if cfg.APIKey == "" {
				cfg.APIKey = p.APIKey
			}
		}
	}
	if cfg.APIBase == "" && known {
		cfg.APIBase = spec.DefaultAPIBase
	}
	if cfg.APIBase == "" {
		return cfg, fmt.Errorf("tts: provider %q has no apiBase: set tts.apiBase or providers.%s.apiBase", name, name)
	}
	if cfg.Format != "" && cfg.Format != "opus" {
		cfg.FFmpeg = tts.FindFFmpeg()
	}
	return cfg, nil
}

func providerKeyIs(key, name string) bool {
	s, ok := providers.Lookup(key)
	return ok && s.Name == name
}

// diagnoseVoice is doctor's view of voice replies: the endpoint, and
// ffmpeg when the server's format needs converting to Ogg/Opus.
func diagnoseVoice(c *configs.Config) []finding {
	if !c.TTS.Enabled {
		return nil
	}
	cfg, err := ttsConfig(c)
	if err != nil {
		return []finding{{"risk", "tts.enabled but " + err.Error() + ": voice replies are off", "set tts.apiBase (or configure the provider tts.provider names)"}}
	}
	var out []finding
	if cfg.APIKey == "" {
		out = append(out, finding{"warn", "tts has no API key (tts.apiKey or the provider's apiKey): only a local speech server will answer", ""})
	}
	switch {
	case cfg.Format == "" || cfg.Format == "opus":
		out = append(out, finding{"ok", "voice replies: the speech server sends Ogg/Opus, sent as is (no ffmpeg needed)", ""})
	case cfg.FFmpeg != "":
		out = append(out, finding{"ok", fmt.Sprintf("voice replies: tts.format %q is converted to Ogg/Opus with %s", cfg.Format, cfg.FFmpeg), ""})
	default:
		out = append(out, finding{"risk", fmt.Sprintf("tts.format is %q but voice messages need Ogg/Opus and ffmpeg is not installed: every voice reply will fail", cfg.Format), "set tts.format to \"opus\", or install ffmpeg (apt install ffmpeg)"})
	}
	return out
}
