package configs

import (
	"fmt"
	"slices"
	"strings"
)

// transcriptionProviders are the speech-to-text services the
// transcription section may name, with their aliases and the environment
// variable the Python nanobot reads their key from, in nanobot's order.
// providers/stt holds their endpoints, models and APIs; a test there keeps
// both lists in step.
var transcriptionProviders = []struct {
	name    string
	aliases []string
	env     string
}{
	{"groq", nil, "GROQ_API_KEY"},
	{"openai", nil, "OPENAI_API_KEY"},
	{"openrouter", nil, "OPENROUTER_API_KEY"},
	{"xiaomi_mimo", []string{"mimo", "xiaomi"}, "XIAOMIMIMO_API_KEY"},
	{"stepfun", nil, "STEPFUN_API_KEY"},
	{"assemblyai", nil, "ASSEMBLYAI_API_KEY"},
	{"siliconflow", []string{"silicon"}, "SILICONFLOW_API_KEY"},
}

// TranscriptionProviders returns the names transcription.provider knows,
// each with its aliases.
func TranscriptionProviders() map[string][]string {
	out := map[string][]string{}
	for _, p := range transcriptionProviders {
		out[p.name] = slices.Clone(p.aliases)
	}
	return out
}

// transcriptionNames is the list of known names for messages.
func transcriptionNames() string {
	names := make([]string, len(transcriptionProviders))
	for i, p := range transcriptionProviders {
		names[i] = p.name
	}
	return strings.Join(names, ", ")
}

// transcriptionProvider is the registry entry of name (or an alias), in
// any spelling ("xiaomiMimo", "MIMO"); ok is false for other names.
func transcriptionProvider(name string) (canonical, env string, ok bool) {
	n := normKey(strings.TrimSpace(name))
	for _, p := range transcriptionProviders {
		if normKey(p.name) == n || slices.ContainsFunc(p.aliases, func(a string) bool { return normKey(a) == n }) {
			return p.name, p.env, true
		}
	}
	return "", "", false
}

// TranscriptionService is the speech-to-text service the transcription
// section names, with the endpoint and key of its providers entry.
type TranscriptionService struct {
	// Provider is the registry name ("xiaomi_mimo" for "mimo"), or the
	// name as written for another Whisper-compatible server.
	Provider string
	// APIBase is providers.<name>.apiBase; "" means the service's default.
	APIBase string
	// APIKey is providers.<name>.apiKey.
	APIKey string
	// Model and Language are transcription.model and .language.
	Model, Language string
	// Proxy is providers.<name>.proxy: the service is reached through it
	// as the provider's chat calls are.
	Proxy string
}

// TranscriptionService returns the service voice notes are transcribed
// with. ok is false when transcription is off (no provider named, or
// enabled false) or cannot work; why then says what is missing, for a
// warning.
func (c *Config) TranscriptionService() (s TranscriptionService, ok bool, why string) {
	s, ok, why = resolveTranscription(c.Transcription, c.Endpoint)
	if !ok {
		return s, ok, why
	}
	// The entry the key came from: the canonical name's, else the name as
	// written (resolveTranscription looks them up in that order).
	for _, name := range []string{s.Provider, strings.TrimSpace(c.Transcription.Provider)} {
		if p, found := c.provider(name); found {
			s.Proxy = p.Proxy
			break
		}
	}
	return s, ok, why
}

// resolveTranscription resolves t against the providers entries, which
// endpoint looks up by name.
func resolveTranscription(t TranscriptionConfig, endpoint func(name string) (apiBase, apiKey string)) (TranscriptionService, bool, string) {
	name := strings.TrimSpace(t.Provider)
	if name == "" || (t.Enabled != nil && !*t.Enabled) {
		return TranscriptionService{}, false, ""
	}
	s := TranscriptionService{Provider: name, Model: t.Model, Language: t.Language}
	canonical, _, known := transcriptionProvider(name)
	if !known {
		s.APIBase, s.APIKey = endpoint(name)
		if s.APIBase == "" {
			return s, false, fmt.Sprintf("transcription.provider: %q is not a speech-to-text service known here (%s); another Whisper-compatible server needs providers.%s.apiBase. Voice notes are not transcribed", name, transcriptionNames(), name)
		}
		return s, true, ""
	}
	s.Provider = canonical
	s.APIBase, s.APIKey = endpoint(canonical)
	if s.APIBase == "" && s.APIKey == "" && canonical != name {
		s.APIBase, s.APIKey = endpoint(name)
	}
	if s.APIKey == "" {
		return s, false, fmt.Sprintf("transcription.provider: providers.%s.apiKey is not set; voice notes are not transcribed", canonical)
	}
	return s, true, ""
}

// transcriptionWarnings are the load-time warnings about the
// transcription section.
func transcriptionWarnings(c *Config) []string {
	if _, _, why := c.TranscriptionService(); why != "" {
		return []string{why}
	}
	return nil
}

// transcriptionFindings judge the transcription section of a Python
// nanobot config for the migration report: a provider is carried over
// only if it works here. When the file names none, nanobot transcribes
// with Groq once providers.groq has a key; that default is written out,
// so the migrated config behaves the same. The findings are for paths of
// tree; reports are for keys the file does not have.
func transcriptionFindings(tree map[string]any) (findings []CompatFinding, reports []KeyReport) {
	tr := lookupMap(tree, []string{"transcription"}, false)
	var t TranscriptionConfig
	if tr != nil {
		if k, ok := findKey(tr, "provider"); ok {
			t.Provider, _ = tr[k].(string)
		}
		if k, ok := findKey(tr, "enabled"); ok {
			if b, isBool := tr[k].(bool); isBool {
				t.Enabled = &b
			}
		}
	}
	providers := lookupMap(tree, []string{"providers"}, false)
	endpoint := func(name string) (string, string) {
		for k, v := range providers {
			if normKey(k) != normKey(name) {
				continue
			}
			entry, _ := v.(map[string]any)
			str := func(key string) string {
				if k, ok := findKey(entry, key); ok {
					s, _ := entry[k].(string)
					return s
				}
				return ""
			}
			return str("apiBase"), str("apiKey")
		}
		return "", ""
	}
	if t.Enabled != nil && !*t.Enabled {
		return nil, nil
	}
	if strings.TrimSpace(t.Provider) == "" {
		if _, key := endpoint("groq"); key != "" {
			tr = lookupMap(tree, []string{"transcription"}, true)
			tr["provider"] = "groq"
			reports = append(reports, KeyReport{Path: "transcription.provider", Status: CompatSame,
				Note: "not set: nanobot's default, groq (providers.groq has a key), is written out"})
		}
		return nil, reports
	}
	_, ok, why := resolveTranscription(t, endpoint)
	if ok {
		return nil, reports
	}
	status, msg := CompatUnsupported, why
	if canonical, env, known := transcriptionProvider(t.Provider); known {
		status = CompatChanged
		msg = fmt.Sprintf("providers.%s.apiKey is not set: nanobot falls back to the %s environment variable, this program does not; write \"apiKey\": \"${%s}\" there, or voice notes are not transcribed", canonical, env, env)
	}
	msg = strings.TrimPrefix(msg, "transcription.provider: ")
	// The key may have come from channels.transcriptionProvider.
	return []CompatFinding{{Path: "transcription.provider", Status: status, Msg: msg}, {Path: "channels.transcriptionProvider", Status: status, Msg: msg}}, reports
}
