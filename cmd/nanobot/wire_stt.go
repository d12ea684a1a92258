package main

import (
	"fmt"
	"log/slog"
	"net/url"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/channels/telegram"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/stt"
)

// buildTranscription builds what transcribes voice notes: the service of
// the top-level transcription section for every channel, and Telegram's
// own transcription object (the older way) for Telegram. A setting that
// cannot be used is logged and left out; the load already warned about
// an unusable section.
func buildTranscription(c *configs.Config, log *slog.Logger) agent.TranscriptionConfig {
	var out agent.TranscriptionConfig
	if s, ok, _ := c.TranscriptionService(); ok {
		cfg := stt.Config{Provider: s.Provider, APIBase: s.APIBase, APIKey: s.APIKey, Model: s.Model, Language: s.Language}
		var err error
		if s.Proxy != "" {
			cfg.HTTPClient, err = providers.ProxyClient(s.Proxy)
		}
		var tr *stt.Client
		if err == nil {
			tr, err = stt.New(cfg)
		}
		if err != nil {
			log.Warn("voice notes are not transcribed", "err", err)
		} else {
			out.Transcriber = tr
		}
	}
	if tc, ok := telegramTranscription(c); ok {
		tr, err := stt.New(stt.Config{APIBase: tc.APIBase, APIKey: tc.APIKey, Model: tc.Model, Language: tc.Language})
		if err != nil {
			log.Warn("telegram voice notes are not transcribed with channels.telegram.transcription", "err", err)
		} else {
			out.ByChannel = map[string]agent.Transcriber{"telegram": tr}
		}
	}
	return out
}

// telegramTranscription is channels.telegram.transcription, when it names
// an endpoint.
func telegramTranscription(c *configs.Config) (telegram.Transcription, bool) {
	tg := telegram.DefaultConfig()
	if err := c.Channels.Decode("telegram", &tg); err != nil || tg.Transcription.APIBase == "" {
		return telegram.Transcription{}, false
	}
	return tg.Transcription, true
}

// diagnoseTranscription is doctor's view of voice-note transcription.
func diagnoseTranscription(c *configs.Config) []finding {
	var out []finding
	s, ok, why := c.TranscriptionService()
	switch {
	case why != "":
		out = append(out, finding{"warn", why, "see docs/configuration.md#transcription"})
	case ok:
		cl, err := stt.New(stt.Config{Provider: s.Provider, APIBase: s.APIBase, APIKey: s.APIKey, Model: s.Model, Language: s.Language})
		if err != nil {
			out = append(out, finding{"warn", "transcription: " + err.Error(), ""})
			break
		}
		provider, model := cl.Service()
		out = append(out, finding{"ok", fmt.Sprintf("voice notes on every channel are transcribed by %s (%s)", provider, model), ""})
	}
	if tc, ok := telegramTranscription(c); ok {
		base := "its endpoint"
		if u, err := url.Parse(tc.APIBase); err == nil {
			base = u.Redacted()
		}
		out = append(out, finding{"ok", "telegram voice notes are transcribed by " + base + " (channels.telegram.transcription)", ""})
	}
	return out
}
