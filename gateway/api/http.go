package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

// WebhookHandler serves /v1/: access checks first (CORS, key), then the
// routes, each handed the caller the key names.
func (c *Channel) WebhookHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !c.cors(w, r) {
			return
		}
		who, ok := c.authorized(w, r)
		if !ok {
			return
		}
		// Listing models is free; what runs a turn counts.
		if r.Method == http.MethodPost && c.rateLimited(w, who.bucket) {
			return
		}
		c.route(w, r, who)
	})
}

// route sends a request to its handler.
func (c *Channel) route(w http.ResponseWriter, r *http.Request, who caller) {
	path, get, post := r.URL.Path, r.Method == http.MethodGet, r.Method == http.MethodPost
	switch id, isModel := strings.CutPrefix(path, "/v1/models/"); {
	case get && path == "/v1/models":
		c.models(w, r)
	case get && isModel && id != "": // ids may hold a slash (openai/gpt-4o)
		c.model(w, id)
	case post && path == "/v1/chat/completions":
		c.chatCompletions(w, r, who)
	case post && path == "/v1/responses":
		c.responses(w, r, who)
	default:
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "no route "+r.Method+" "+path+" (this gateway serves GET /v1/models, POST /v1/chat/completions and POST /v1/responses)")
	}
}

// caller is who a request's key says it is: bucket is its rate limit's
// key, ns the namespace of its sessions and stored responses ("" is the
// owner's).
type caller struct {
	bucket string
	ns     string
}

// sessionKey is the session of the caller's named session id.
func (who caller) sessionKey(id string) string {
	if who.ns == "" {
		return Name + ":" + id
	}
	// '/' is not allowed in a session id, so no id of the owner's
	// namespace spells a client's session.
	return Name + ":" + who.ns + "/" + id
}

// apiKey is an accepted key: the digest it is compared by and its
// namespace.
type apiKey struct {
	digest []byte
	ns     string
}

// newKeys lists the accepted keys: the owner's token and the shared keys
// in the owner's namespace, each client key in its own.
func newKeys(cfg Config) []apiKey {
	var keys []apiKey
	if cfg.Owner != nil {
		keys = append(keys, apiKey{digest: digest(cfg.Owner.Token())})
	}
	for _, k := range cfg.Keys {
		keys = append(keys, apiKey{digest: digest(k)})
	}
	for _, k := range cfg.ClientKeys {
		d := digest(k)
		keys = append(keys, apiKey{digest: d, ns: "k" + hex.EncodeToString(d[:6])})
	}
	return keys
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

// authorized checks the key and returns who it names. There is no way in
// without one: a loopback peer may be the agent's own command or another
// user of the machine.
func (c *Channel) authorized(w http.ResponseWriter, r *http.Request) (caller, bool) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(token) == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="nanobot"`)
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "missing API key: send \"Authorization: Bearer <key>\" with a key from api.apiKey or api.apiKeys, or the instance's access token (`nanobot webui token` prints it)")
		return caller{}, false
	}
	got := digest(strings.TrimSpace(token))
	found := -1
	for i, k := range c.keys {
		// No early exit: the same time for every key.
		if subtle.ConstantTimeCompare(got, k.digest) == 1 {
			found = i
		}
	}
	if found < 0 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="nanobot", error="invalid_token"`)
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "invalid API key")
		return caller{}, false
	}
	return caller{bucket: string(got), ns: c.keys[found].ns}, true
}

// digest hashes a key, so keys of any length compare in constant time.
func digest(key string) []byte {
	sum := sha256.Sum256([]byte(key))
	return sum[:]
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
