// Package teamstest is a local stand-in for the Bot Framework services a
// Microsoft Teams bot talks to, written from the Bot Framework REST API and
// authentication documentation:
//
//   - the Bot Connector's OpenID metadata and signing keys (a JWKS with an
//     RSA key of its own, which can be rotated);
//   - the Bot Connector's side of the messaging endpoint: activities POSTed
//     to the bot with a signed JWT (issuer https://api.botframework.com,
//     audience the app id, a serviceurl claim), the answer recorded as the
//     acknowledgement;
//   - the login endpoint's client-credentials grant (app id and password
//     checked, tokens with a lifetime the test chooses);
//   - the Connector REST API: POST /v3/conversations/{id}/activities[/{replyToId}]
//     and PUT /v3/conversations/{id}/activities/{activityId}, each checking
//     the bearer token it issued and that it has not expired.
//
// What a real client should never do is recorded as a violation.
//
// Concurrency: every method is safe for concurrent use.
package teamstest

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Credentials and ids the fake uses.
const (
	AppID       = "00000000-1111-2222-3333-444444444444"
	AppPassword = "teams-app-password~7Q"
	TenantID    = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
	BotID       = "28:" + AppID
	BotName     = "nanobot"
	// Issuer is the Bot Connector's token issuer.
	Issuer = "https://api.botframework.com"
)

// Conversation types.
const (
	Personal  = "personal"
	GroupChat = "groupChat"
	ChannelT  = "channel"
)

// Message is what a Teams user writes.
type Message struct {
	// From is the user's id ("29:…"); AAD is their Azure AD object id.
	From, AAD, Name string
	// Conversation is the conversation id; "" makes a personal chat "a:<From>".
	Conversation string
	// Type is Personal (default), GroupChat or ChannelT.
	Type string
	Text string
	// MentionBot puts "<at>nanobot</at> " before Text with its entity.
	MentionBot bool
	// Tenant overrides the tenant id (default TenantID).
	Tenant string
}

// Sent is one activity the bot sent or edited.
type Sent struct {
	Conversation string
	ActivityID   string
	ReplyToID    string
	Type         string // message, typing
	Text         string
	Edit         bool
	At           time.Time
}

// Server is the fake.
type Server struct {
	// URL is the fake's base (service URL, login and metadata live under it).
	URL string
	// WebhookURL is where activities are POSTed (the bot's messaging
	// endpoint); set it before Emit.
	WebhookURL string
	// TokenTTL is the lifetime of issued access tokens (default 1 h).
	TokenTTL time.Duration

	t   testing.TB
	srv *httptest.Server

	mu         sync.Mutex
	key        *rsa.PrivateKey
	kid        string
	oldKeys    map[string]*rsa.PublicKey
	tokens     map[string]time.Time // issued access token -> expiry
	issued     int
	keyFetches int
	sent       []Sent
	acks       map[string]int // activity id -> HTTP status of the POST
	violations []string
	next       int
}

// New starts the fake; Close is registered with t.Cleanup.
func New(t testing.TB) *Server {
	s := &Server{t: t, tokens: map[string]time.Time{}, acks: map[string]int{}, oldKeys: map[string]*rsa.PublicKey{}, TokenTTL: time.Hour}
	s.key, s.kid = newKey(t), "kid-1"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /openid", s.metadata)
	mux.HandleFunc("GET /keys", s.keys)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("POST /v3/conversations/{conv}/activities", s.post)
	mux.HandleFunc("POST /v3/conversations/{conv}/activities/{reply}", s.post)
	mux.HandleFunc("PUT /v3/conversations/{conv}/activities/{id}", s.put)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

func newKey(t testing.TB) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// MetadataURL is the OpenID metadata document.
func (s *Server) MetadataURL() string { return s.URL + "/openid" }

// LoginURL is the token endpoint.
func (s *Server) LoginURL() string { return s.URL + "/login" }

func (s *Server) violate(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.violations = append(s.violations, fmt.Sprintf(format, args...))
}

// Violations lists protocol errors the bot made.
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.violations...)
}

// Sent lists the bot's activities, in order.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// Issued counts access tokens issued; KeyFetches counts JWKS downloads.
func (s *Server) Issued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issued
}

// KeyFetches counts JWKS downloads.
func (s *Server) KeyFetches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keyFetches
}

// Acked is the HTTP status the bot answered an emitted activity with (0:
// no answer yet).
func (s *Server) Acked(activityID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acks[activityID]
}

// RotateKey replaces the signing key with a new one under a new kid; the
// old key stays published (as the real service keeps keys for a while).
func (s *Server) RotateKey() {
	k := newKey(s.t)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.oldKeys[s.kid] = &s.key.PublicKey
	s.key = k
	s.kid = fmt.Sprintf("kid-%d", len(s.oldKeys)+1)
}

// ExpireTokens makes every issued access token expired.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.tokens {
		s.tokens[k] = time.Now().Add(-time.Second)
	}
}

func (s *Server) metadata(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{
		"issuer": Issuer, "authorization_endpoint": "https://invalid.example/authorize",
		"jwks_uri": s.URL + "/keys", "id_token_signing_alg_values_supported": []string{"RS256"},
		"token_endpoint_auth_methods_supported": []string{"private_key_jwt"},
	})
}

func jwk(kid string, k *rsa.PublicKey) map[string]any {
	return map[string]any{"kty": "RSA", "use": "sig", "kid": kid, "alg": "RS256",
		"n": base64.RawURLEncoding.EncodeToString(k.N.Bytes()), "e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(k.E)).Bytes()),
		"endorsements": []string{"msteams"}}
}

func (s *Server) keys(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	s.keyFetches++
	keys := []map[string]any{jwk(s.kid, &s.key.PublicKey)}
	for kid, k := range s.oldKeys {
		keys = append(keys, jwk(kid, k))
	}
	s.mu.Unlock()
	writeJSON(w, map[string]any{"keys": keys})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	f := r.PostForm
	if f.Get("grant_type") != "client_credentials" || f.Get("scope") != "https://api.botframework.com/.default" {
		s.violate("login with grant_type %q scope %q", f.Get("grant_type"), f.Get("scope"))
	}
	if f.Get("client_id") != AppID || f.Get("client_secret") != AppPassword {
		w.WriteHeader(http.StatusUnauthorized)
		writeJSON(w, map[string]any{"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided."})
		return
	}
	s.mu.Lock()
	s.issued++
	tok := fmt.Sprintf("access-%d-%s", s.issued, randHex())
	s.tokens[tok] = time.Now().Add(s.TokenTTL)
	ttl := s.TokenTTL
	s.mu.Unlock()
	writeJSON(w, map[string]any{"token_type": "Bearer", "expires_in": int(ttl.Seconds()), "ext_expires_in": int(ttl.Seconds()), "access_token": tok})
}

// authorized checks the connector call's bearer token.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	exp, known := s.tokens[tok]
	s.mu.Unlock()
	if !ok || !known || time.Now().After(exp) {
		w.WriteHeader(http.StatusUnauthorized)
		writeJSON(w, map[string]any{"message": "Authorization has been denied for this request."})
		return false
	}
	return true
}

type activity struct {
	Type         string `json:"type"`
	ID           string `json:"id"`
	Text         string `json:"text"`
	TextFormat   string `json:"textFormat"`
	ReplyToID    string `json:"replyToId"`
	Conversation struct {
		ID string `json:"id"`
	} `json:"conversation"`
	From struct {
		ID string `json:"id"`
	} `json:"from"`
}

func (s *Server) post(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	var a activity
	if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
		s.violate("unreadable activity: %v", err)
		http.Error(w, "bad activity", http.StatusBadRequest)
		return
	}
	conv := r.PathValue("conv")
	if a.Type != "message" && a.Type != "typing" {
		s.violate("activity type %q", a.Type)
	}
	if a.Type == "message" && strings.TrimSpace(a.Text) == "" {
		s.violate("empty message to %s", conv)
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]any{"error": map[string]any{"code": "BadArgument", "message": "Empty message"}})
		return
	}
	if a.Conversation.ID != "" && a.Conversation.ID != conv {
		s.violate("activity for conversation %q posted to %q", a.Conversation.ID, conv)
	}
	if reply := r.PathValue("reply"); reply != "" && a.ReplyToID != "" && a.ReplyToID != reply {
		s.violate("replyToId %q posted under %q", a.ReplyToID, reply)
	}
	s.mu.Lock()
	s.next++
	id := fmt.Sprintf("%d", 1700000000000+s.next)
	s.sent = append(s.sent, Sent{Conversation: conv, ActivityID: id, ReplyToID: r.PathValue("reply"), Type: a.Type, Text: a.Text, At: time.Now()})
	s.mu.Unlock()
	if a.Type == "typing" {
		writeJSON(w, map[string]any{})
		return
	}
	writeJSON(w, map[string]any{"id": id})
}

func (s *Server) put(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	var a activity
	if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
		s.violate("unreadable activity: %v", err)
		http.Error(w, "bad activity", http.StatusBadRequest)
		return
	}
	conv, id := r.PathValue("conv"), r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	found := false
	for _, m := range s.sent {
		if m.Conversation == conv && m.ActivityID == id && !m.Edit {
			found = true
		}
	}
	if !found {
		s.violations = append(s.violations, fmt.Sprintf("edit of unknown activity %s in %s", id, conv))
		w.WriteHeader(http.StatusNotFound)
		writeJSON(w, map[string]any{"error": map[string]any{"code": "ActivityNotFound"}})
		return
	}
	s.sent = append(s.sent, Sent{Conversation: conv, ActivityID: id, Type: a.Type, Text: a.Text, Edit: true, At: time.Now()})
	writeJSON(w, map[string]any{"id": id})
}

// Claims are the claims of a token the fake signs; Token fills defaults.
type Claims struct {
	Issuer     string
	Audience   string
	ServiceURL string
	Expires    time.Time
	NotBefore  time.Time
	// Key signs instead of the fake's key (a forgery); Kid names the key
	// in the header (default: the fake's current kid).
	Key *rsa.PrivateKey
	Kid string
	// Alg is the signing method (default RS256).
	Alg jwt.SigningMethod
}

// Token signs a Bot Connector token; zero fields get the genuine values.
func (s *Server) Token(c Claims) string {
	s.mu.Lock()
	key, kid := s.key, s.kid
	s.mu.Unlock()
	if c.Issuer == "" {
		c.Issuer = Issuer
	}
	if c.Audience == "" {
		c.Audience = AppID
	}
	if c.ServiceURL == "" {
		c.ServiceURL = s.URL + "/"
	}
	if c.Expires.IsZero() {
		c.Expires = time.Now().Add(time.Hour)
	}
	if c.NotBefore.IsZero() {
		c.NotBefore = time.Now().Add(-time.Minute)
	}
	if c.Key != nil {
		key = c.Key
	}
	if c.Kid != "" {
		kid = c.Kid
	}
	alg := c.Alg
	if alg == nil {
		alg = jwt.SigningMethodRS256
	}
	tok := jwt.NewWithClaims(alg, jwt.MapClaims{
		"iss": c.Issuer, "aud": c.Audience, "serviceurl": c.ServiceURL,
		"exp": c.Expires.Unix(), "nbf": c.NotBefore.Unix(), "iat": c.NotBefore.Unix(),
	})
	tok.Header["kid"] = kid
	var signed string
	var err error
	if alg == jwt.SigningMethodHS256 {
		signed, err = tok.SignedString([]byte("secret"))
	} else {
		signed, err = tok.SignedString(key)
	}
	if err != nil {
		s.t.Fatalf("teamstest: signing: %v", err)
	}
	return signed
}

// NewKey makes an RSA key for forged tokens.
func NewKey(t testing.TB) *rsa.PrivateKey { return newKey(t) }

// Activity builds the activity JSON for m and returns it with its id and
// conversation id.
func (s *Server) Activity(m Message) (body []byte, activityID, conversation string) {
	s.mu.Lock()
	s.next++
	id := fmt.Sprintf("%d", 1600000000000+s.next)
	s.mu.Unlock()
	typ := m.Type
	if typ == "" {
		typ = Personal
	}
	conv := m.Conversation
	if conv == "" {
		conv = "a:" + strings.TrimPrefix(m.From, "29:")
	}
	tenant := m.Tenant
	if tenant == "" {
		tenant = TenantID
	}
	name := m.Name
	if name == "" {
		name = "User " + m.From
	}
	text := m.Text
	var entities []map[string]any
	if m.MentionBot {
		text = "<at>" + BotName + "</at> " + text
		entities = append(entities, map[string]any{"type": "mention", "text": "<at>" + BotName + "</at>",
			"mentioned": map[string]any{"id": BotID, "name": BotName}})
	}
	a := map[string]any{
		"type": "message", "id": id, "timestamp": time.Now().UTC().Format(time.RFC3339Nano), "serviceUrl": s.URL + "/",
		"channelId": "msteams", "from": map[string]any{"id": m.From, "name": name, "aadObjectId": m.AAD},
		"conversation": map[string]any{"id": conv, "conversationType": typ, "tenantId": tenant, "isGroup": typ != Personal},
		"recipient":    map[string]any{"id": BotID, "name": BotName},
		"text":         text, "textFormat": "plain", "locale": "en-US",
		"entities":    entities,
		"channelData": map[string]any{"tenant": map[string]any{"id": tenant}},
	}
	b, _ := json.Marshal(a)
	return b, id, conv
}

// Emit POSTs m to WebhookURL with a genuine token, in the background (the
// answer is recorded for Acked), and returns the conversation and
// activity id the bot should report.
func (s *Server) Emit(m Message) (conversation, activityID string) {
	body, id, conv := s.Activity(m)
	tok := s.Token(Claims{})
	go func() {
		code := s.Post(body, tok)
		s.mu.Lock()
		s.acks[id] = code
		s.mu.Unlock()
	}()
	return conv, id
}

// Post sends body to WebhookURL with token (no Authorization header when
// token is "") and returns the HTTP status.
func (s *Server) Post(body []byte, token string) int {
	req, err := http.NewRequest(http.MethodPost, s.WebhookURL, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// WithServiceURL rewrites an activity's serviceUrl.
func WithServiceURL(body []byte, u string) []byte {
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	m["serviceUrl"] = u
	b, _ := json.Marshal(m)
	return b
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func randHex() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}
