package configs

import (
	"fmt"
	"net/url"
	"strings"
)

// APIConfig is the OpenAI-compatible API the gateway serves under /v1 (see
// docs/api.md).
type APIConfig struct {
	// Enabled serves /v1/models, /v1/chat/completions and /v1/responses.
	// Default true.
	Enabled bool `json:"enabled"`
	// APIKey is a key clients may send as "Authorization: Bearer <key>";
	// it shares the owner's sessions. The instance's access token
	// (state/web_token, `nanobot webui token`) is always accepted too, so
	// the API never answers without a key. Default none.
	APIKey string `json:"apiKey"`
	// APIKeys are further accepted keys, one per client so each can be
	// revoked alone; each has sessions and stored responses of its own
	// unless ShareSessions. Default none.
	APIKeys []string `json:"apiKeys"`
	// ShareSessions lets every key continue every other key's named
	// sessions and stored responses (as before keys had their own).
	// Default false.
	ShareSessions bool `json:"shareSessions"`
	// CORSOrigins are the browser origins ("https://chat.example.com")
	// allowed to call the API from a web page; "*" allows any. Default
	// none.
	CORSOrigins []string `json:"corsOrigins"`
	// MaxBodyBytes bounds a JSON request body (images sent as data URLs
	// included). Default 8 MiB.
	MaxBodyBytes int64 `json:"maxBodyBytes"`
	// MaxUploadBytes bounds a multipart/form-data request (a message with
	// files). Default 20 MiB.
	MaxUploadBytes int64 `json:"maxUploadBytes"`
	// RateLimit limits each key's requests.
	RateLimit APIRateLimit `json:"rateLimit"`
	// MaxConcurrent caps the API's turns in flight (counted by the process
	// that takes the request, so also where the agent runs on other
	// workers). Default 0: agents.defaults.maxConcurrentTurns.
	MaxConcurrent int `json:"maxConcurrent"`
	// QueueTimeoutMs is how long a request waits for one of those turns to
	// end when all are taken before it is answered 429 (agent busy).
	// Default 3000; 0 answers at once.
	QueueTimeoutMs int `json:"queueTimeoutMs"`
}

// APIRateLimit is a per-key request limit (a token bucket: a key may send
// RequestsPerMinute requests at once, then one every 60/RequestsPerMinute
// seconds).
type APIRateLimit struct {
	// RequestsPerMinute is each key's limit on requests that run a turn
	// (chat completions, responses); over it the API answers 429 with
	// Retry-After. Without keys, all loopback clients share one limit.
	// Default 0: no limit.
	RequestsPerMinute int `json:"requestsPerMinute"`
}

// DefaultAPIMaxBodyBytes is APIConfig.MaxBodyBytes's default.
const DefaultAPIMaxBodyBytes = 8 << 20

// DefaultAPIMaxUploadBytes is APIConfig.MaxUploadBytes's default.
const DefaultAPIMaxUploadBytes = 20 << 20

// DefaultAPIQueueTimeoutMs is APIConfig.QueueTimeoutMs's default.
const DefaultAPIQueueTimeoutMs = 3000

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
	// A key is a secret: name its field, never the key.
	const short = "keys must be at least 16 characters (use a long random string, e.g. `openssl rand -hex 24`)"
	if k := strings.TrimSpace(c.APIKey); k != "" && len(k) < 16 {
		v.add(p+"apiKey", short)
	}
	for i, k := range c.APIKeys {
		if k = strings.TrimSpace(k); k != "" && len(k) < 16 {
			v.add(fmt.Sprintf(p+"apiKeys[%d]", i), short)
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
	v.require(c.MaxUploadBytes >= 1024 && c.MaxUploadBytes <= 1<<30, p+"maxUploadBytes", "want 1024 to 1073741824 bytes, got %d", c.MaxUploadBytes)
	v.require(c.MaxConcurrent >= 0 && c.MaxConcurrent <= 100_000, p+"maxConcurrent", "want 0 (agents.defaults.maxConcurrentTurns) to 100000, got %d", c.MaxConcurrent)
	v.require(c.QueueTimeoutMs >= 0 && c.QueueTimeoutMs <= 600_000, p+"queueTimeoutMs", "want 0 to 600000 ms, got %d", c.QueueTimeoutMs)
	v.require(c.RateLimit.RequestsPerMinute >= 0 && c.RateLimit.RequestsPerMinute <= 1_000_000, p+"rateLimit.requestsPerMinute", "want 0 (no limit) to 1000000, got %d", c.RateLimit.RequestsPerMinute)
}
