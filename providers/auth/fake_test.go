package auth_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeGitHub is github.com's device flow plus api.github.com's Copilot
// token exchange, as documented, on one loopback server.
type fakeGitHub struct {
	t   *testing.T
	srv *httptest.Server

	mu sync.Mutex
	// polls are the error codes answered to successive token polls; when
	// they run out the poll succeeds.
	polls     []string
	pollTimes int
	ghToken   string
	// revoked makes the exchange answer 401.
	revoked bool
	// ttl is the life of each Copilot token; endpoint its endpoints.api.
	ttl      time.Duration
	endpoint string
	now      func() time.Time
	// release, when set, holds every exchange until it is closed.
	release chan struct{}

	exchanges atomic.Int32
	issued    []string
}

func newFakeGitHub(t *testing.T) *fakeGitHub {
	f := &fakeGitHub{t: t, ghToken: "gho_FAKEgithubTOKEN0123456789", ttl: 25 * time.Minute, now: time.Now}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /login/device/code", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("client_id") == "" {
			http.Error(w, `{"error":"unauthorized_client"}`, http.StatusBadRequest)
			return
		}
		writeJSON(w, 200, map[string]any{
			"device_code": "device-code-1", "user_code": "WDJB-MJHT",
			"verification_uri": "https://github.com/login/device", "expires_in": 900, "interval": 5,
		})
	})
	mux.HandleFunc("POST /login/oauth/access_token", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("device_code") != "device-code-1" || r.FormValue("grant_type") != "urn:ietf:params:oauth:grant-type:device_code" {
			writeJSON(w, 400, map[string]any{"error": "invalid_grant"})
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.pollTimes++
		if len(f.polls) > 0 {
			code := f.polls[0]
			f.polls = f.polls[1:]
			body := map[string]any{"error": code}
			if code == "slow_down" {
				body["interval"] = 10
			}
			// GitHub answers 200 with an error field.
			writeJSON(w, 200, body)
			return
		}
		writeJSON(w, 200, map[string]any{"access_token": f.ghToken, "token_type": "bearer", "scope": "read:user"})
	})
	mux.HandleFunc("GET /copilot_internal/v2/token", func(w http.ResponseWriter, r *http.Request) {
		f.exchanges.Add(1)
		f.mu.Lock()
		release, revoked := f.release, f.revoked
		f.mu.Unlock()
		if release != nil {
			<-release
		}
		if r.Header.Get("Authorization") != "token "+f.ghToken || revoked {
			writeJSON(w, 401, map[string]any{"message": "Bad credentials"})
			return
		}
		if r.Header.Get("Editor-Version") == "" {
			writeJSON(w, 400, map[string]any{"message": "missing Editor-Version"})
			return
		}
		f.mu.Lock()
		tok := fmt.Sprintf("tid=copilot-%d;exp=%d;sku=free", len(f.issued)+1, f.now().Unix())
		f.issued = append(f.issued, tok)
		exp := f.now().Add(f.ttl).Unix()
		endpoint := f.endpoint
		f.mu.Unlock()
		writeJSON(w, 200, map[string]any{"token": tok, "expires_at": exp, "refresh_in": 1500, "endpoints": map[string]any{"api": endpoint}})
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGitHub) latest() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.issued) == 0 {
		return ""
	}
	return f.issued[len(f.issued)-1]
}

// fakeOpenAIAuth is auth.openai.com: the authorization endpoint (played by
// the test as the browser), the token endpoint checking PKCE, refresh, and
// the device-code endpoints.
type fakeOpenAIAuth struct {
	t   *testing.T
	srv *httptest.Server

	mu sync.Mutex
	// codes maps issued authorization codes to their challenge and
	// redirect_uri.
	codes map[string][2]string
	// expired codes are answered invalid_grant.
	expired      map[string]bool
	refreshToken string
	refreshOK    bool
	accessN      int
	ttl          int64
	devicePolls  int // 403s before the device flow is approved
	// down makes the token endpoint answer 503.
	down bool

	tokenCalls   atomic.Int32
	refreshCalls atomic.Int32
}

const fakeAccountID = "acct-7f3e1c"

func newFakeOpenAIAuth(t *testing.T) *fakeOpenAIAuth {
	f := &fakeOpenAIAuth{t: t, codes: map[string][2]string{}, expired: map[string]bool{}, refreshOK: true, ttl: 3600}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /oauth/token", func(w http.ResponseWriter, r *http.Request) {
		f.tokenCalls.Add(1)
		f.mu.Lock()
		down := f.down
		f.mu.Unlock()
		if down {
			writeJSON(w, 503, map[string]any{"error": "temporarily_unavailable"})
			return
		}
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			var body map[string]string
			_ = json.NewDecoder(r.Body).Decode(&body)
			f.refresh(w, body)
			return
		}
		if r.FormValue("grant_type") != "authorization_code" {
			writeJSON(w, 400, map[string]any{"error": "unsupported_grant_type"})
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		code := r.FormValue("code")
		want, ok := f.codes[code]
		sum := sha256.Sum256([]byte(r.FormValue("code_verifier")))
		switch {
		case !ok || f.expired[code]:
			writeJSON(w, 400, map[string]any{"error": "invalid_grant", "error_description": "code expired"})
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != want[0]:
			writeJSON(w, 400, map[string]any{"error": "invalid_grant", "error_description": "code_verifier does not match"})
			return
		case r.FormValue("redirect_uri") != want[1]:
			writeJSON(w, 400, map[string]any{"error": "invalid_grant", "error_description": "redirect_uri mismatch"})
			return
		}
		delete(f.codes, code) // single use
		writeJSON(w, 200, f.tokensLocked(true))
	})
	mux.HandleFunc("POST /api/accounts/deviceauth/usercode", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"device_auth_id": "dev-auth-1", "user_code": "QXZT-8842", "interval": "5"})
	})
	mux.HandleFunc("POST /api/accounts/deviceauth/token", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.devicePolls > 0 {
			f.devicePolls--
			w.WriteHeader(http.StatusForbidden)
			return
		}
		verifier := "device-verifier-0123456789-0123456789-0123456789"
		sum := sha256.Sum256([]byte(verifier))
		challenge := base64.RawURLEncoding.EncodeToString(sum[:])
		f.codes["device-code-xyz"] = [2]string{challenge, f.srv.URL + "/deviceauth/callback"}
		writeJSON(w, 200, map[string]any{"authorization_code": "device-code-xyz", "code_verifier": verifier, "code_challenge": challenge})
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// authorize plays the consent screen: it issues a code for the challenge
// and redirect_uri of an authorization URL.
func (f *fakeOpenAIAuth) authorize(challenge, redirect string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	code := fmt.Sprintf("code-%d", len(f.codes)+1)
	f.codes[code] = [2]string{challenge, redirect}
	return code
}

func (f *fakeOpenAIAuth) refresh(w http.ResponseWriter, body map[string]string) {
	f.refreshCalls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if body["grant_type"] != "refresh_token" || body["refresh_token"] != f.refreshToken || !f.refreshOK {
		writeJSON(w, 401, map[string]any{"error": map[string]any{"message": "Your refresh token has already been used to generate a new access token.", "code": "refresh_token_reused"}})
		return
	}
	writeJSON(w, 200, f.tokensLocked(true))
}

func (f *fakeOpenAIAuth) tokensLocked(rotate bool) map[string]any {
	f.accessN++
	if rotate {
		f.refreshToken = fmt.Sprintf("rt_fakeREFRESH%04d_abcdef", f.accessN)
	}
	return map[string]any{
		"access_token":  fmt.Sprintf("at_fakeACCESS%04d_abcdef", f.accessN),
		"refresh_token": f.refreshToken,
		"id_token":      fakeJWT(map[string]any{"email": "a@example.com", "https://api.openai.com/auth": map[string]any{"chatgpt_account_id": fakeAccountID}}),
		"expires_in":    f.ttl,
	}
}

func fakeJWT(claims map[string]any) string {
	b, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"none"}`)) + "." + enc.EncodeToString(b) + ".sig"
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// fakeXAIAuth is auth.x.ai as the Python nanobot and the Grok CLI use it:
// OpenID Connect discovery, the authorization endpoint (played by the test
// as the browser), the token endpoint (authorization code checked against
// its PKCE challenge, refresh with rotation; both want the client-version
// header) and userinfo.
type fakeXAIAuth struct {
	t   *testing.T
	srv *httptest.Server

	mu sync.Mutex
	// discovery, when set, replaces fields of the discovery document.
	discovery map[string]any
	// codes maps issued authorization codes to their challenge and
	// redirect_uri.
	codes        map[string][2]string
	refreshToken string
	access       string
	refreshOK    bool
	// down makes the token endpoint answer 503.
	down    bool
	accessN int
	ttl     int64
	// release, when set, holds every refresh until it is closed.
	release chan struct{}
	// problems are requests the fake would refuse for their shape.
	problems []string

	tokenCalls   atomic.Int32
	refreshCalls atomic.Int32
}

const fakeXAIEmail = "grok-user@example.com"

func newFakeXAIAuth(t *testing.T) *fakeXAIAuth {
	f := &fakeXAIAuth{t: t, codes: map[string][2]string{}, refreshOK: true, ttl: 3600}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		doc := map[string]any{
			"issuer":                 f.srv.URL,
			"authorization_endpoint": f.srv.URL + "/oauth2/auth",
			"token_endpoint":         f.srv.URL + "/oauth2/token",
			"userinfo_endpoint":      f.srv.URL + "/userinfo",
		}
		f.mu.Lock()
		for k, v := range f.discovery {
			doc[k] = v
		}
		f.mu.Unlock()
		writeJSON(w, 200, doc)
	})
	mux.HandleFunc("POST /oauth2/token", func(w http.ResponseWriter, r *http.Request) {
		f.tokenCalls.Add(1)
		f.mu.Lock()
		defer f.mu.Unlock()
		if r.Header.Get("X-Grok-Client-Version") == "" {
			f.problems = append(f.problems, "token call without x-grok-client-version")
		}
		if f.down {
			writeJSON(w, 503, map[string]any{"error": "temporarily_unavailable"})
			return
		}
		if r.FormValue("client_id") != "b1a00492-073a-47ea-816f-4c329264a828" {
			writeJSON(w, 401, map[string]any{"error": "invalid_client"})
			return
		}
		switch r.FormValue("grant_type") {
		case "refresh_token":
			f.refreshCalls.Add(1)
			if release := f.release; release != nil {
				f.mu.Unlock()
				<-release
				f.mu.Lock()
			}
			if r.FormValue("refresh_token") != f.refreshToken || !f.refreshOK {
				writeJSON(w, 400, map[string]any{"error": "invalid_grant", "error_description": "refresh token " + r.FormValue("refresh_token") + " is invalid"})
				return
			}
			writeJSON(w, 200, f.tokensLocked())
		case "authorization_code":
			code := r.FormValue("code")
			want, ok := f.codes[code]
			sum := sha256.Sum256([]byte(r.FormValue("code_verifier")))
			switch {
			case !ok:
				writeJSON(w, 400, map[string]any{"error": "invalid_grant", "error_description": "code expired"})
			case base64.RawURLEncoding.EncodeToString(sum[:]) != want[0]:
				writeJSON(w, 400, map[string]any{"error": "invalid_grant", "error_description": "code_verifier does not match"})
			case r.FormValue("redirect_uri") != want[1]:
				writeJSON(w, 400, map[string]any{"error": "invalid_grant", "error_description": "redirect_uri mismatch"})
			default:
				delete(f.codes, code) // single use
				writeJSON(w, 200, f.tokensLocked())
			}
		default:
			writeJSON(w, 400, map[string]any{"error": "unsupported_grant_type"})
		}
	})
	mux.HandleFunc("GET /userinfo", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		ok := r.Header.Get("Authorization") == "Bearer "+f.access
		f.mu.Unlock()
		if !ok {
			writeJSON(w, 401, map[string]any{"error": "invalid_token"})
			return
		}
		writeJSON(w, 200, map[string]any{"sub": "user-42", "email": fakeXAIEmail, "name": "Grok User"})
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// authorize plays the consent screen: it issues a code for the challenge
// and redirect_uri of an authorization URL.
func (f *fakeXAIAuth) authorize(challenge, redirect string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	code := fmt.Sprintf("xai-code-%d", len(f.codes)+1)
	f.codes[code] = [2]string{challenge, redirect}
	return code
}

// tokensLocked mints an access token (a JWT naming the user) and rotates
// the refresh token.
func (f *fakeXAIAuth) tokensLocked() map[string]any {
	f.accessN++
	f.refreshToken = fmt.Sprintf("xai_fakeREFRESH%04d_abcdef", f.accessN)
	f.access = fakeJWT(map[string]any{"sub": "user-42", "email": fakeXAIEmail, "n": f.accessN})
	return map[string]any{"access_token": f.access, "refresh_token": f.refreshToken, "token_type": "Bearer", "expires_in": f.ttl}
}

func (f *fakeXAIAuth) current() (access, refresh string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.access, f.refreshToken
}

func (f *fakeXAIAuth) shapeProblems() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.problems...)
}
