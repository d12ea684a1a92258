package providers

import (
	"net/http"
	"time"
)

// Endpoint is what every vendor backend (providers/openai,
// providers/anthropic, providers/bedrock) needs to reach its API. Each
// backend's Options embeds it, and says there what a field means for that
// API where it differs: the default Name and APIBase, how the key is sent,
// where ExtraBody goes.
type Endpoint struct {
	// Name names the provider in errors and logs ("deepseek"); "" means
	// the backend's own name.
	Name string
	// APIKey authenticates the requests. May be empty where the API needs
	// no key or the backend has other credentials.
	APIKey string
	// APIBase is the API's base URL; "" means the backend's default.
	APIBase string
	// ExtraHeaders are added to every request (config extraHeaders).
	ExtraHeaders map[string]string
	// ExtraBody is merged into every request body (config extraBody); its
	// top-level keys replace what the backend would send.
	ExtraBody map[string]any
	// HTTPClient overrides the HTTP client; nil means the backend's
	// default.
	HTTPClient *http.Client
	// RequestTimeout bounds a call, and a stream's wait for its first
	// event; 0 means none (the ctx decides).
	RequestTimeout time.Duration
	// StreamIdleTimeout fails a stream with no event for this long; 0
	// means none.
	StreamIdleTimeout time.Duration
}
