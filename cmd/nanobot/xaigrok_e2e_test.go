package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/providers/providertest"
)

// fakeXAI is auth.x.ai (OpenID discovery, an authorization endpoint that
// consents at once and redirects to the loopback, a token endpoint
// checking PKCE and rotating refresh tokens, userinfo) and xAI's
// subscription proxy on loopback. The proxy is a providertest server whose
// handler refuses what the real one would: a missing or stale bearer, no
// Grok client headers, a request not streamed, stored, or without the
// model override.
type fakeXAI struct {
	auth *httptest.Server
	llm  *providertest.Server

	mu       sync.Mutex
	codes    map[string][2]string // code -> challenge, redirect_uri
	n        int
	access   string
	refresh  string
	revoked  bool
	refreshN int
	refused  []string
	// script answers the proxy's accepted requests.
	script func(providertest.Request) providertest.Reply
}

const xaiAccount = "grok-e2e@example.com"

var xaiScopes = "openid profile email offline_access grok-cli:access api:access conversations:read conversations:write workspaces:read workspaces:write"

func newFakeXAI(t *testing.T) *fakeXAI {
	f := &fakeXAI{codes: map[string][2]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		writeJSONStatus(w, 200, map[string]any{"issuer": f.auth.URL, "authorization_endpoint": f.auth.URL + "/oauth2/auth",
			"token_endpoint": f.auth.URL + "/oauth2/token", "userinfo_endpoint": f.auth.URL + "/userinfo"})
	})
	mux.HandleFunc("GET /oauth2/auth", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		redirect, err := url.Parse(q.Get("redirect_uri"))
		if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" ||
			q.Get("client_id") != "b1a00492-073a-47ea-816f-4c329264a828" || q.Get("scope") != xaiScopes || q.Get("nonce") == "" ||
			err != nil || redirect.Hostname() != "127.0.0.1" || redirect.Path != "/callback" {
			http.Error(w, "bad authorization request", http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.n++
		code := fmt.Sprintf("xai_e2e_code_%d", f.n)
		f.codes[code] = [2]string{q.Get("code_challenge"), q.Get("redirect_uri")}
		f.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+url.Values{"code": {code}, "state": {q.Get("state")}}.Encode(), http.StatusFound)
	})
	mux.HandleFunc("POST /oauth2/token", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if r.Header.Get("X-Grok-Client-Version") == "" {
			writeJSONStatus(w, 426, map[string]any{"error": "upgrade_required"})
			return
		}
		switch r.FormValue("grant_type") {
		case "refresh_token":
			if r.FormValue("refresh_token") != f.refresh || f.revoked {
				writeJSONStatus(w, 400, map[string]any{"error": "invalid_grant", "error_description": "refresh token revoked"})
				return
			}
			f.refreshN++
			writeJSONStatus(w, 200, f.issueLocked())
		case "authorization_code":
			code := r.FormValue("code")
			want, ok := f.codes[code]
			sum := sha256.Sum256([]byte(r.FormValue("code_verifier")))
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != want[0] || r.FormValue("redirect_uri") != want[1] {
				writeJSONStatus(w, 400, map[string]any{"error": "invalid_grant"})
				return
			}
			delete(f.codes, code)
			writeJSONStatus(w, 200, f.issueLocked())
		default:
			writeJSONStatus(w, 400, map[string]any{"error": "unsupported_grant_type"})
		}
	})
	mux.HandleFunc("GET /userinfo", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		ok := r.Header.Get("Authorization") == "Bearer "+f.access
		f.mu.Unlock()
		if !ok {
			writeJSONStatus(w, 401, map[string]any{"error": "invalid_token"})
			return
		}
		writeJSONStatus(w, 200, map[string]any{"sub": "u-e2e", "email": xaiAccount})
	})
	f.auth = httptest.NewServer(mux)
	t.Cleanup(f.auth.Close)

	f.llm = providertest.New(t)
	f.llm.SetModels(200, `{"data":[{"id":"grok-4.5","supportsBackendSearch":true}]}`)
	f.llm.Handle(func(req providertest.Request) providertest.Reply {
		if why := f.check(req); why != "" {
			f.mu.Lock()
			f.refused = append(f.refused, why)
			f.mu.Unlock()
			status := 400
			if strings.HasPrefix(why, "auth:") {
				status = 401
			}
			return providertest.Reply{Status: status, Body: fmt.Sprintf(`{"error":%q}`, why)}
		}
		f.mu.Lock()
		script := f.script
		f.mu.Unlock()
		return script(req)
	})
	return f
}

func (f *fakeXAI) check(req providertest.Request) string {
	f.mu.Lock()
	access := f.access
	f.mu.Unlock()
	h := req.Header
	switch {
	case req.Path != "/v1/responses":
		return "wrong path " + req.Path
	case access == "" || h.Get("Authorization") != "Bearer "+access:
		return "auth: the access token is missing, stale or expired"
	case h.Get("X-Xai-Token-Auth") != "xai-grok-cli" || h.Get("X-Grok-Client-Version") == "" || h.Get("X-Grok-Conv-Id") == "":
		return "not a Grok client"
	case h.Get("X-Grok-Model-Override") != req.Model:
		return "model override " + h.Get("X-Grok-Model-Override")
	case !req.Stream || req.Body["store"] != false:
		return "stream must be true and store false"
	}
	return ""
}

func (f *fakeXAI) issueLocked() map[string]any {
	f.n++
	f.access = fmt.Sprintf("xai_e2eACCESS%04d", f.n)
	f.refresh = fmt.Sprintf("xai_e2eREFRESH%04d", f.n)
	return map[string]any{"access_token": f.access, "refresh_token": f.refresh, "expires_in": 3600, "token_type": "Bearer"}
}

func (f *fakeXAI) state() (access, refresh string, refreshes int, refused []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.access, f.refresh, f.refreshN, append([]string(nil), f.refused...)
}

func (f *fakeXAI) responses() []providertest.Request {
	var out []providertest.Request
	for _, r := range f.llm.Requests() {
		if r.Format == providertest.Responses {
			out = append(out, r)
		}
	}
	return out
}

var xaiAuthURL = regexp.MustCompile(`https?://\S+/oauth2/auth\?\S+`)

// xaiConfig writes the config a nanobot user has for the Grok sign-in
// (nanobot's key names), pointed at the fakes.
func xaiConfig(t *testing.T, f *fakeXAI) (dir, cfg string) {
	t.Helper()
	dir = t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("the launch code is 7412\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg = filepath.Join(dir, "config.json")
	body := fmt.Sprintf(`{
	  "agents": {"defaults": {"provider": "xai_grok", "model": "xai-grok/grok-4.5", "workspace": %q}},
	  "providers": {"xaiGrok": {"apiBase": %q, "signIn": {"authBase": %q}}}
	}`, ws, f.llm.URL+"/v1", f.auth.URL)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, cfg
}

// loginXAI runs `nanobot provider login xai-grok` and plays the browser
// with open, which gets the printed authorization URL.
func loginXAI(t *testing.T, cfg string, in io.Reader, open func(authURL string), extra ...string) string {
	t.Helper()
	out := &urlWriter{urls: make(chan string, 1), pattern: xaiAuthURL}
	cmd := newRootCmd()
	cmd.SetOut(out)
	cmd.SetErr(out)
	if in != nil {
		cmd.SetIn(in)
	}
	cmd.SetArgs(append([]string{"provider", "login", "xai-grok", "--config", cfg, "--timeout", "1m"}, extra...))
	done := make(chan error, 1)
	go func() { done <- cmd.Execute() }()
	select {
	case authURL := <-out.urls:
		open(authURL)
	case err := <-done:
		t.Fatalf("login ended before printing a URL: %v\n%s", err, out)
	case <-time.After(30 * time.Second):
		t.Fatalf("no authorization URL printed:\n%s", out)
	}
	if err := <-done; err != nil {
		t.Fatalf("login: %v\n%s", err, out)
	}
	return out.String()
}

// TestXAIGrokSignInChatEndToEnd: the config a nanobot user has for the
// Grok subscription, `nanobot provider login xai-grok` through the browser
// redirect, an agent turn whose tool call and answer stream through the
// fake proxy with the sign-in's token and the Grok client headers (hosted
// X Search added from the catalog), a token past its expiry renewed
// before the call, a revoked refresh token answered once with the login
// command, and status, logout.
func TestXAIGrokSignInChatEndToEnd(t *testing.T) {
	f := newFakeXAI(t)
	dir, cfg := xaiConfig(t, f)

	out := loginXAI(t, cfg, nil, func(authURL string) {
		resp, err := http.Get(authURL) // consent, then back to the loopback
		if err != nil {
			t.Errorf("browser: %v", err)
			return
		}
		page, _ := readAllString(resp)
		if resp.StatusCode != 200 || !strings.Contains(page, "Signed in to xAI") {
			t.Errorf("callback page %d: %s", resp.StatusCode, page)
		}
	})
	if !strings.Contains(out, "Signed in to xai-grok (account "+xaiAccount+")") {
		t.Errorf("login output:\n%s", out)
	}
	tokenFile := filepath.Join(dir, "state", "auth.json")
	if fi, err := os.Stat(tokenFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v, want mode 600", err, fi)
	}

	// A turn with a tool call: the model reads notes.txt, then answers.
	f.mu.Lock()
	f.script = func(req providertest.Request) providertest.Reply {
		for _, it := range req.Input() {
			if it["type"] == "function_call_output" && it["call_id"] == "call_notes" {
				return providertest.Reply{Text: "The note says the launch code is 7412."}
			}
		}
		return providertest.Reply{Reasoning: "read the note", Encrypted: "enc-grok",
			ToolCalls: []providertest.ToolCall{{ID: "call_notes", Name: "read_file", Arguments: `{"path":"notes.txt"}`}}}
	}
	f.mu.Unlock()
	access1, _, _, _ := f.state()
	stdout, stderr, err := run(t, "agent", "-m", "what does my note say?", "--config", cfg)
	if err != nil || strings.TrimSpace(stdout) != "The note says the launch code is 7412." {
		_, _, _, refused := f.state()
		t.Fatalf("agent -m: %v, stdout %q, stderr %q, refused %q", err, stdout, stderr, refused)
	}
	reqs := f.responses()
	if len(reqs) != 2 {
		t.Fatalf("%d proxy calls, want 2 (the tool call, then the answer)", len(reqs))
	}
	var sawResult bool
	for _, it := range reqs[1].Input() {
		if it["type"] == "function_call_output" && strings.Contains(fmt.Sprint(it["output"]), "7412") {
			sawResult = true
		}
	}
	if !sawResult {
		t.Error("the second call did not carry the tool's result")
	}
	for i, r := range reqs {
		if r.Header.Get("Authorization") != "Bearer "+access1 || r.Model != "grok-4.5" || !strings.Contains(string(r.Raw), `{"type":"x_search"}`) {
			t.Errorf("call %d: bearer ok %v, model %q, tools %v", i, r.Header.Get("Authorization") == "Bearer "+access1, r.Model, r.Body["tools"])
		}
	}

	// The stored expiry has passed: the token is renewed before the call.
	setSignInExpiry(t, tokenFile, "xai-grok", time.Now().Add(-time.Hour))
	f.mu.Lock()
	f.script = func(providertest.Request) providertest.Reply { return providertest.Reply{Text: "Grok says hi."} }
	f.mu.Unlock()
	stdout, stderr, err = run(t, "agent", "-m", "hi", "--config", cfg)
	access2, _, refreshes, refused := f.state()
	if err != nil || strings.TrimSpace(stdout) != "Grok says hi." {
		t.Fatalf("agent -m with an expired token: %v, stdout %q, stderr %q, refused %q", err, stdout, stderr, refused)
	}
	if refreshes != 1 || access2 == access1 || len(refused) != 0 {
		t.Errorf("refreshes %d (want 1), renewed %v, refused %q (want none: the renewal comes first)", refreshes, access2 != access1, refused)
	}

	// Status shows the sign-in and where the model goes.
	st, _, err := run(t, "status", "--config", cfg)
	if err != nil || !regexp.MustCompile(`xai-grok\s+signed in .*account `+regexp.QuoteMeta(xaiAccount)).MatchString(st) ||
		!strings.Contains(st, `provider:   xai-grok (provider "xai-grok" set in config; sends model "grok-4.5"`) {
		t.Errorf("status: %v\n%s", err, st)
	}

	// Revoked at xAI, access token expired: one clear message, no call to
	// the model, no token shown.
	f.mu.Lock()
	f.revoked = true
	f.mu.Unlock()
	setSignInExpiry(t, tokenFile, "xai-grok", time.Now().Add(-time.Minute))
	before := len(f.responses())
	stdout, stderr, err = run(t, "agent", "-m", "again", "--config", cfg)
	if err == nil {
		t.Fatalf("agent -m with a revoked sign-in succeeded: %q", stdout)
	}
	t.Logf("after revocation: %v", err)
	if n := strings.Count(err.Error(), "nanobot provider login xai-grok"); n != 1 {
		t.Errorf("the reply names the login command %d times, want once: %q", n, err)
	}
	_, refresh, _, _ := f.state()
	seen := stdout + stderr + err.Error()
	for _, secret := range []string{access2, refresh, "xai_e2eACCESS", "xai_e2eREFRESH"} {
		if strings.Contains(seen, secret) {
			t.Errorf("the user sees a token (%s…)", secret[:8])
		}
	}
	if n := len(f.responses()) - before; n != 0 {
		t.Errorf("%d model calls without a valid sign-in", n)
	}

	out, _, err = run(t, "provider", "logout", "xai", "--config", cfg)
	if err != nil || !strings.Contains(out, "xai-grok: signed out") {
		t.Errorf("logout: %v\n%s", err, out)
	}
	if stored, _ := os.ReadFile(tokenFile); strings.Contains(string(stored), "xai-grok") {
		t.Error("the tokens are still stored after logout")
	}
}

// TestXAIGrokPastedLogin: on a headless server the browser is elsewhere;
// it ends on a 127.0.0.1 address that does not load there, and the user
// pastes that address into `login --paste`.
func TestXAIGrokPastedLogin(t *testing.T) {
	f := newFakeXAI(t)
	_, cfg := xaiConfig(t, f)
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	out := loginXAI(t, cfg, pr, func(authURL string) {
		// The other machine's browser: consent, but the redirect to
		// 127.0.0.1 is not followed.
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noFollow.Get(authURL)
		if err != nil {
			t.Errorf("browser: %v", err)
			return
		}
		resp.Body.Close()
		go func() { _, _ = io.WriteString(pw, "\n"+resp.Header.Get("Location")+"\n") }()
	}, "--paste")
	if !strings.Contains(out, "paste that address") || !strings.Contains(out, "Signed in to xai-grok (account "+xaiAccount+")") {
		t.Errorf("login output:\n%s", out)
	}
}

// TestXAIGrokWithAnAPIKeyIsXAI: providers.xaiGrok with an apiKey is
// xAI's API, as before the sign-in existed; no sign-in is asked for.
func TestXAIGrokWithAnAPIKeyIsXAI(t *testing.T) {
	srv := providertest.New(t)
	srv.Push(providertest.Reply{Text: "from the xAI API"})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	body := fmt.Sprintf(`{
	  "agents": {"defaults": {"model": "xai-grok/grok-4", "workspace": %q}},
	  "providers": {"xaiGrok": {"apiKey": "xai-test-key-123456", "apiBase": %q}}
	}`, filepath.Join(dir, "ws"), srv.OpenAIBase())
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := run(t, "agent", "-m", "hi", "--config", cfg)
	if err != nil || strings.TrimSpace(stdout) != "from the xAI API" {
		t.Fatalf("agent -m: %v, %q, %q", err, stdout, stderr)
	}
	r := srv.Requests()[0]
	if r.Path != "/v1/chat/completions" || r.Model != "grok-4" || r.Header.Get("Authorization") != "Bearer xai-test-key-123456" {
		t.Errorf("request %s for %q, key sent %v; want chat completions for grok-4 with the key", r.Path, r.Model, r.Header.Get("Authorization") != "")
	}
}

// setSignInExpiry rewrites one provider's stored access-token expiry.
func setSignInExpiry(t *testing.T, tokenFile, provider string, at time.Time) {
	t.Helper()
	var stored map[string]map[string]any
	b, err := os.ReadFile(tokenFile)
	if err == nil {
		err = json.Unmarshal(b, &stored)
	}
	if err != nil {
		t.Fatal(err)
	}
	stored[provider]["expiresAt"] = at
	b, _ = json.Marshal(stored)
	if err := os.WriteFile(tokenFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
