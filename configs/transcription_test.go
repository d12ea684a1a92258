package configs

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTranscriptionService(t *testing.T) {
	off := false
	for _, tc := range []struct {
		name      string
		t         TranscriptionConfig
		providers map[string]ProviderConfig
		want      TranscriptionService
		ok        bool
		why       string
	}{
		{name: "none", t: TranscriptionConfig{}, providers: map[string]ProviderConfig{"groq": {APIKey: "k"}}},
		{name: "switched off", t: TranscriptionConfig{Provider: "groq", Enabled: &off}, providers: map[string]ProviderConfig{"groq": {APIKey: "k"}}},
		{name: "groq", t: TranscriptionConfig{Provider: "groq", Model: "whisper-large-v3-turbo", Language: "de"},
			providers: map[string]ProviderConfig{"groq": {APIKey: "gsk"}},
			want:      TranscriptionService{Provider: "groq", APIKey: "gsk", Model: "whisper-large-v3-turbo", Language: "de"}, ok: true},
		{name: "alias, entry in camelCase", t: TranscriptionConfig{Provider: "mimo"},
			providers: map[string]ProviderConfig{"xiaomiMimo": {APIKey: "mk", APIBase: "https://token-plan.example/v1"}},
			want:      TranscriptionService{Provider: "xiaomi_mimo", APIKey: "mk", APIBase: "https://token-plan.example/v1"}, ok: true},
		{name: "alias, entry under the alias", t: TranscriptionConfig{Provider: "silicon"},
			providers: map[string]ProviderConfig{"silicon": {APIKey: "sk"}},
			want:      TranscriptionService{Provider: "siliconflow", APIKey: "sk"}, ok: true},
		{name: "no key", t: TranscriptionConfig{Provider: "assemblyai"}, providers: map[string]ProviderConfig{"assemblyai": {APIBase: "https://eu.example/v2"}},
			want: TranscriptionService{Provider: "assemblyai", APIBase: "https://eu.example/v2"},
			why:  "providers.assemblyai.apiKey is not set"},
		{name: "another server", t: TranscriptionConfig{Provider: "localWhisper"},
			providers: map[string]ProviderConfig{"localWhisper": {APIBase: "http://127.0.0.1:9000/v1"}},
			want:      TranscriptionService{Provider: "localWhisper", APIBase: "http://127.0.0.1:9000/v1"}, ok: true},
		{name: "unknown", t: TranscriptionConfig{Provider: "deepgram"}, providers: map[string]ProviderConfig{"deepgram": {APIKey: "d"}},
			want: TranscriptionService{Provider: "deepgram", APIKey: "d"},
			why:  "(groq, openai, openrouter, xiaomi_mimo, stepfun, assemblyai, siliconflow)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Config{Transcription: tc.t, Providers: tc.providers}
			got, ok, why := c.TranscriptionService()
			if ok != tc.ok || (tc.why == "") != (why == "") || !strings.Contains(why, tc.why) {
				t.Errorf("ok %v, why %q; want %v, %q", ok, why, tc.ok, tc.why)
			}
			if tc.want.Provider != "" {
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Errorf("service (-want +got):\n%s", d)
				}
			}
		})
	}
}

func TestTranscriptionOnLoad(t *testing.T) {
	l := load(t, `{"providers": {"groq": {"apiKey": "gsk-0123456789"}}, "transcription": {"provider": "deepgram"}}`)
	if !strings.Contains(strings.Join(l.Warnings, "\n"), `"deepgram" is not a speech-to-text service known here (groq, openai`) {
		t.Errorf("warnings %q, want one naming the known services", l.Warnings)
	}
	// nanobot's older spelling is read as the new one.
	l = load(t, `{"providers": {"xiaomi_mimo": {"apiKey": "mk-0123456789"}}, "channels": {"transcriptionProvider": "xiaomi", "transcriptionLanguage": "zh"}}`)
	s, ok, why := l.Config.TranscriptionService()
	if !ok || s.Provider != "xiaomi_mimo" || s.Language != "zh" || s.APIKey != "mk-0123456789" {
		t.Errorf("service %+v, %v, %q", s, ok, why)
	}
	if len(l.Warnings) != 0 {
		t.Errorf("warnings %q", l.Warnings)
	}
}

// The migration report calls transcription carried over only when it
// works here, and writes out nanobot's default provider.
func TestMigrateTranscription(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       string
		path     string
		status   CompatStatus
		note     string
		provider any // transcription.provider in the output
	}{
		{"works", `{"providers": {"groq": {"apiKey": "${GROQ_API_KEY}"}}, "transcription": {"provider": "groq"}}`,
			"transcription.provider", CompatSame, "", "groq"},
		{"alias", `{"providers": {"xiaomi_mimo": {"api_key": "k"}}, "transcription": {"provider": "mimo"}}`,
			"transcription.provider", CompatSame, "", "mimo"},
		{"no key", `{"transcription": {"provider": "assemblyai"}}`,
			"transcription.provider", CompatChanged, "ASSEMBLYAI_API_KEY", "assemblyai"},
		{"unknown", `{"providers": {"deepgram": {"apiKey": "k"}}, "transcription": {"provider": "deepgram"}}`,
			"transcription.provider", CompatUnsupported, "known here (groq", "deepgram"},
		{"legacy key", `{"providers": {"openai": {"apiKey": "k"}}, "channels": {"transcriptionProvider": "openai"}}`,
			"channels.transcriptionProvider", CompatSame, "carried over as transcription.provider", "openai"},
		{"legacy key without its key", `{"channels": {"transcriptionProvider": "openrouter"}}`,
			"channels.transcriptionProvider", CompatChanged, "OPENROUTER_API_KEY", "openrouter"},
		{"nanobot's default", `{"providers": {"groq": {"apiKey": "g"}}}`,
			"transcription.provider", CompatSame, "nanobot's default", "groq"},
		{"default switched off", `{"providers": {"groq": {"apiKey": "g"}}, "transcription": {"enabled": false}}`,
			"transcription.enabled", CompatSame, "", nil},
		{"no default without a key", `{"providers": {"openai": {"apiKey": "o"}}}`,
			"providers.openai.apiKey", CompatSame, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := MigratePython([]byte(tc.in), nil)
			if err != nil {
				t.Fatal(err)
			}
			var found bool
			for _, k := range m.Keys {
				if k.Path == tc.path {
					found = true
					if k.Status != tc.status || !strings.Contains(k.Note, tc.note) {
						t.Errorf("%s: %q (%s), want %q with %q", k.Path, k.Status, k.Note, tc.status, tc.note)
					}
				}
			}
			if !found {
				t.Errorf("%s not in the report: %+v", tc.path, m.Keys)
			}
			var out struct {
				Transcription map[string]any `json:"transcription"`
			}
			if err := json.Unmarshal(m.Output, &out); err != nil {
				t.Fatal(err)
			}
			if got := out.Transcription["provider"]; got != tc.provider {
				t.Errorf("output transcription.provider = %v, want %v", got, tc.provider)
			}
		})
	}
}
