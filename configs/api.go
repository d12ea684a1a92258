package configs

import (
	"fmt"
	"net/url"
	"strings"
)

// APIConfig is the OpenAI-compatible API the gateway serves under /v1 (see
// docs/api.md).
type APIConfig struct {
	// Enabled serves /v1/models and /v1/chat/completions. Default true.
	Enabled bool `json:"enabled"`
	// APIKey is a key clients must send as "Authorization: Bearer <key>".
	// With neither APIKey nor APIKeys the API needs no key, which the
	// gateway allows only on a loopback bind (gateway.host). Default none.
	APIKey string `json:"apiKey"`
	// APIKeys are further accepted keys (one per client, so each can be
	// revoked alone). Default none.
	APIKeys []string `json:"apiKeys"`
	// CORSOrigins are the browser origins ("https://chat.example.com")
	// allowed to call the API from a web page; "*" allows any. Default
	// none.
	CORSOrigins []string `json:"corsOrigins"`
	// MaxBodyBytes bounds a request body. Default 8 MiB.
	MaxBodyBytes int64 `json:"maxBodyBytes"`
}

// DefaultAPIMaxBodyBytes is APIConfig.MaxBodyBytes's default.
const DefaultAPIMaxBodyBytes = 8 << 20

// Keys returns every configured API key (APIKey first), without blanks.
func (c APIConfig) Keys() []string {
	var out []string
	for _, k := range append([]string{c.APIKey}, c.APIKeys...) {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

func (v *validator) api(c APIConfig) {
	p := "api."
	for i, k := range c.APIKeys {
		v.require(strings.TrimSpace(k) != "", fmt.Sprintf(p+"apiKeys[%d]", i), "must not be empty")
	}
	for _, k := range c.Keys() {
		if len(k) < 16 {
			// The value is a secret: name the field, never the key.
			v.add(p+"apiKey", "keys must be at least 16 characters (use a long random string, e.g. `openssl rand -hex 24`)")
			break
		}
	}
	for i, o := range c.CORSOrigins {
		if o == "*" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			v.add(fmt.Sprintf(p+"corsOrigins[%d]", i), "want an origin like https://chat.example.com or \"*\", got %q", o)
		}
	}
	v.require(c.MaxBodyBytes >= 1024 && c.MaxBodyBytes <= 1<<30, p+"maxBodyBytes", "want 1024 to 1073741824 bytes, got %d", c.MaxBodyBytes)
}
