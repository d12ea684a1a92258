package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// WebhookHandler serves /v1/: access checks first (CORS, key or loopback),
// then the routes.
func (c *Channel) WebhookHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", c.models)
	mux.HandleFunc("GET /v1/models/{id}", c.model)
	mux.HandleFunc("POST /v1/chat/completions", c.chatCompletions)
	mux.HandleFunc("POST /v1/responses", c.responses)
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "no route "+r.Method+" "+r.URL.Path+" (this gateway serves GET /v1/models, POST /v1/chat/completions and POST /v1/responses)")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !c.cors(w, r) {
			return
		}
		key, ok := c.authorized(w, r)
		if !ok {
			return
		}
		// Listing models is free; what runs a turn counts.
		if r.Method == http.MethodPost && c.rateLimited(w, key) {
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// cors answers preflights and refuses pages from origins not configured:
// requests without an Origin header (scripts, SDKs) pass.
func (c *Channel) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	allowed := slices.Contains(c.cfg.CORSOrigins, "*") || slices.Contains(c.cfg.CORSOrigins, origin)
	if !allowed {
		writeError(w, http.StatusForbidden, "invalid_request_error", "origin_not_allowed", "requests from web pages are allowed only from the origins in api.corsOrigins")
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	if r.Method == http.MethodOptions {
		h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Session-Id")
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return false
	}
	return true
}

// authorized checks the key and returns its digest (the rate limit's
// bucket); without keys, it admits only direct loopback peers (a reverse
// proxy on the same machine would otherwise open the API to whoever
// reaches the proxy), all as the key "".
func (c *Channel) authorized(w http.ResponseWriter, r *http.Request) (string, bool) {
	if len(c.keys) == 0 {
		if !directLoopback(r) {
			writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "this API has no key and answers only direct loopback clients; set api.apiKey to use it through a proxy or over the network")
			return "", false
		}
		return "", true
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="nanobot"`)
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "missing API key: send \"Authorization: Bearer <key>\" with a key from api.apiKey or api.apiKeys")
		return "", false
	}
	got := digest(strings.TrimSpace(token))
	match := 0
	for _, k := range c.keys {
		match |= subtle.ConstantTimeCompare(got, k) // no early exit: same time for every key
	}
	if match != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="nanobot", error="invalid_token"`)
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "invalid API key")
		return "", false
	}
	return string(got), true
}

// digest hashes a key, so keys of any length compare in constant time.
func digest(key string) []byte {
	sum := sha256.Sum256([]byte(key))
	return sum[:]
}

// directLoopback reports whether r comes from a loopback peer without
// proxy forwarding headers.
func directLoopback(r *http.Request) bool {
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Real-Ip"} {
		if r.Header.Get(h) != "" {
			return false
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// apiError is OpenAI's error shape.
type apiError struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	writeParamError(w, status, typ, code, "", msg)
}

func writeParamError(w http.ResponseWriter, status int, typ, code, param, msg string) {
	body := apiError{Error: errorBody{Message: msg, Type: typ, Code: code}}
	if param != "" {
		body.Error.Param = &param
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
