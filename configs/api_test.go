package configs

import (
	"strings"
	"testing"
)

func TestAPIConfigValidation(t *testing.T) {
	cases := []struct {
		name string
		set  func(c *APIConfig)
		path string // "" = valid
	}{
		{"defaults", func(*APIConfig) {}, ""},
		{"long key", func(c *APIConfig) { c.APIKey = "0123456789abcdef" }, ""},
		{"short key", func(c *APIConfig) { c.APIKeys = []string{"short"} }, "api.apiKeys[0]"},
		{"short main key", func(c *APIConfig) { c.APIKey = "short" }, "api.apiKey"},
		{"blank key in list", func(c *APIConfig) { c.APIKeys = []string{" "} }, "api.apiKeys[0]"},
		{"origin with path", func(c *APIConfig) { c.CORSOrigins = []string{"https://a.example/chat"} }, "api.corsOrigins[0]"},
		{"any origin", func(c *APIConfig) { c.CORSOrigins = []string{"*", "http://localhost:3000"} }, ""},
		{"tiny body", func(c *APIConfig) { c.MaxBodyBytes = 10 }, "api.maxBodyBytes"},
		{"tiny upload", func(c *APIConfig) { c.MaxUploadBytes = 10 }, "api.maxUploadBytes"},
		{"rate limit", func(c *APIConfig) { c.RateLimit.RequestsPerMinute = 60 }, ""},
		{"turn cap", func(c *APIConfig) { c.MaxConcurrent, c.QueueTimeoutMs = 4, 0 }, ""},
		{"negative turn cap", func(c *APIConfig) { c.MaxConcurrent = -1 }, "api.maxConcurrent"},
		{"negative queue timeout", func(c *APIConfig) { c.QueueTimeoutMs = -5 }, "api.queueTimeoutMs"},
		{"negative rate limit", func(c *APIConfig) { c.RateLimit.RequestsPerMinute = -1 }, "api.rateLimit.requestsPerMinute"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Default()
			tc.set(&cfg.API)
			var got []string
			for _, e := range cfg.Validate() {
				if strings.HasPrefix(e.Path, "api") {
					got = append(got, e.Path)
					if strings.Contains(e.Msg, "short") && strings.HasPrefix(tc.name, "short") {
						t.Errorf("error echoes the key: %s", e.Msg)
					}
				}
			}
			if tc.path == "" && len(got) > 0 {
				t.Errorf("errors at %q, want none", got)
			}
			if tc.path != "" && (len(got) != 1 || got[0] != tc.path) {
				t.Errorf("errors at %q, want one at %s", got, tc.path)
			}
		})
	}
	if d := Default().API; !d.Enabled || d.MaxBodyBytes != 8<<20 || d.MaxUploadBytes != 20<<20 || d.RateLimit.RequestsPerMinute != 0 {
		t.Errorf("defaults: %+v, want enabled with 8 MiB bodies, 20 MiB uploads, no rate limit", d)
	}
}

func TestTranscriptionLanguageValidation(t *testing.T) {
	for lang, ok := range map[string]bool{"": true, "de": true, "yue": true, "German": false, "d": false, "de-DE": false} {
		cfg := Default()
		cfg.Transcription.Language = lang
		bad := false
		for _, e := range cfg.Validate() {
			bad = bad || e.Path == "transcription.language"
		}
		if bad == ok {
			t.Errorf("language %q: refused %v, want %v", lang, bad, !ok)
		}
	}
}
