package main

import (
	"bytes"
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

// fakeCodex is auth.openai.com (authorize with PKCE, token, refresh with
// rotation) and chatgpt.com/backend-api/codex/responses on loopback. The
// Responses endpoint is a providertest server whose handler enforces what
// the Codex service requires of a client: the current access token as the
// bearer, the ChatGPT account header, the Codex originator, a streamed,
// unstored request with instructions and none of the parameters the
// service refuses (max_output_tokens, temperature).
type fakeCodex struct {
	auth *httptest.Server
	llm  *providertest.Server

	mu       sync.Mutex
	codes    map[string][2]string // code -> challenge, redirect_uri
	n        int
	access   string // the one access token the service accepts
	refresh  string // the one refresh token the token endpoint accepts
	revoked  bool   // the refresh token was revoked at OpenAI
	refreshN int
	refused  []string // why the Responses endpoint refused a request
}

const codexAccount = "acct-e2e-4242"

func newFakeCodex(t *testing.T) *fakeCodex {
	f := &fakeCodex{codes: map[string][2]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /oauth/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		redirect, err := url.Parse(q.Get("redirect_uri"))
		if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" ||
			q.Get("client_id") == "" || !strings.Contains(q.Get("scope"), "offline_access") ||
			err != nil || redirect.Hostname() != "localhost" || redirect.Path != "/auth/callback" {
			http.Error(w, "bad authorization request", http.StatusBadRequest)
			return
		}
		// The user signs in and consents: back to the loopback redirect.
		f.mu.Lock()
		f.n++
		code := fmt.Sprintf("ac_e2e_%d", f.n)
		f.codes[code] = [2]string{q.Get("code_challenge"), q.Get("redirect_uri")}
		f.mu.Unlock()
		back := url.Values{"code": {code}, "state": {q.Get("state")}, "scope": {q.Get("scope")}}
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+back.Encode(), http.StatusFound)
	})
	mux.HandleFunc("POST /oauth/token", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			var body map[string]string
			_ = json.NewDecoder(r.Body).Decode(&body)
			if body["grant_type"] != "refresh_token" || body["refresh_token"] != f.refresh || f.revoked {
				writeJSONStatus(w, 401, map[string]any{"error": map[string]any{
					"message": "Your refresh token has been invalidated. Please try signing in again.", "code": "refresh_token_invalidated"}})
				return
			}
			f.refreshN++
			writeJSONStatus(w, 200, f.issueLocked())
			return
		}
		code := r.FormValue("code")
		want, ok := f.codes[code]
		sum := sha256.Sum256([]byte(r.FormValue("code_verifier")))
		if r.FormValue("grant_type") != "authorization_code" || !ok ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != want[0] || r.FormValue("redirect_uri") != want[1] {
			writeJSONStatus(w, 400, map[string]any{"error": "invalid_grant"})
			return
		}
		delete(f.codes, code)
		writeJSONStatus(w, 200, f.issueLocked())
	})
	f.auth = httptest.NewServer(mux)
	t.Cleanup(f.auth.Close)

	f.llm = providertest.New(t)
	f.llm.Handle(func(req providertest.Request) providertest.Reply {
		if why := f.check(req); why != "" {
			f.mu.Lock()
			f.refused = append(f.refused, why)
			f.mu.Unlock()
			status := 400
			if strings.HasPrefix(why, "auth:") {
				status = 401
			}
			return providertest.Reply{Status: status, Body: fmt.Sprintf(`{"detail":%q}`, why)}
		}
		return providertest.Reply{Text: "Codex says hi.", Reasoning: "greet", Encrypted: "enc-e2e",
			Usage: &providertest.Usage{PromptTokens: 30, CompletionTokens: 7, ReasoningTokens: 4}}
	})
	return f
}

// check returns why the Codex service would refuse req ("" when it
// would not).
func (f *fakeCodex) check(req providertest.Request) string {
	f.mu.Lock()
	access := f.access
	f.mu.Unlock()
	h := req.Header
	switch {
	case req.Path != "/backend-api/codex/responses":
		return "wrong path " + req.Path
	case access == "" || h.Get("Authorization") != "Bearer "+access:
		return "auth: the access token is missing, stale or expired"
	case h.Get("Chatgpt-Account-Id") != codexAccount:
		return "no or wrong chatgpt-account-id"
	case h.Get("Originator") == "":
		return "no originator"
	case !req.Stream:
		return "Stream must be set to true"
	case req.Body["store"] != false:
		return "Store must be set to false"
	case req.Body["instructions"] == nil || req.Body["instructions"] == "":
		return "Instructions are required"
	case req.Body["max_output_tokens"] != nil:
		return "Unsupported parameter: max_output_tokens"
	case req.Body["temperature"] != nil:
		return "Unsupported parameter: temperature"
	}
	return ""
}

// issueLocked mints a new access token and rotates the refresh token.
func (f *fakeCodex) issueLocked() map[string]any {
	f.n++
	f.access = fmt.Sprintf("at_e2eCODEXaccess%04d", f.n)
	f.refresh = fmt.Sprintf("rt_e2eCODEXrefresh%04d", f.n)
	claims, _ := json.Marshal(map[string]any{"email": "e2e@example.com",
		"https://api.openai.com/auth": map[string]any{"chatgpt_account_id": codexAccount}})
	enc := base64.RawURLEncoding
	return map[string]any{
		"access_token": f.access, "refresh_token": f.refresh, "expires_in": 3600,
		"id_token": enc.EncodeToString([]byte(`{"alg":"none"}`)) + "." + enc.EncodeToString(claims) + ".sig",
	}
}

func (f *fakeCodex) state() (access, refresh string, refreshes int, refused []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.access, f.refresh, f.refreshN, append([]string(nil), f.refused...)
}

func writeJSONStatus(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// urlWriter collects the login's output and hands over the first URL it
// prints (matching pattern; nil: an /oauth/authorize URL).
type urlWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	urls    chan string
	sent    bool
	pattern *regexp.Regexp
}

var urlPattern = regexp.MustCompile(`https?://\S+/oauth/authorize\?\S+`)

func (w *urlWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	pattern := w.pattern
	if pattern == nil {
		pattern = urlPattern
	}
	if u := pattern.FindString(w.buf.String()); u != "" && !w.sent {
		w.sent = true
		w.urls <- u
	}
	return len(p), nil
}

func (w *urlWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestCodexSignInChatEndToEnd: the config a user writes from
// docs/providers.md, `nanobot provider login codex` through the browser
// flow (the test plays the browser against the fake authorization
// server), chat turns through `nanobot agent -m` whose calls reach the fake
// Codex endpoint with the sign-in's token and headers, an expired access
// token renewed during a turn (by its stored expiry, and by the service's
// 401), and a revoked refresh token answered with the login command once.
func TestCodexSignInChatEndToEnd(t *testing.T) {
	f := newFakeCodex(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	body := fmt.Sprintf(`{
	  "agents": {"defaults": {"model": "openai-codex/gpt-5-codex", "workspace": %q}},
	  "providers": {"openai-codex": {"apiBase": %q, "signIn": {"authBase": %q, "redirectPort": -1}}}
	}`, filepath.Join(dir, "ws"), f.llm.URL+"/backend-api/codex", f.auth.URL)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}

	// Sign in: the login prints the authorization URL, the "browser"
	// opens it, consents, and is redirected back to the loopback listener.
	out := &urlWriter{urls: make(chan string, 1)}
	cmd := newRootCmd()
	cmd.SetOut(out)
	cmd.SetErr(out)
	cmd.SetArgs([]string{"provider", "login", "codex", "--config", cfg, "--timeout", "1m"})
	done := make(chan error, 1)
	go func() { done <- cmd.Execute() }()
	var authURL string
	select {
	case authURL = <-out.urls:
	case err := <-done:
		t.Fatalf("login ended before printing a URL: %v\n%s", err, out)
	case <-time.After(30 * time.Second):
		t.Fatalf("no authorization URL printed:\n%s", out)
	}
	resp, err := http.Get(authURL)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	page, _ := readAllString(resp)
	if resp.StatusCode != 200 || !strings.Contains(page, "Signed in") {
		t.Fatalf("callback page %d: %s", resp.StatusCode, page)
	}
	if err := <-done; err != nil {
		t.Fatalf("login: %v\n%s", err, out)
	}
	if !strings.Contains(out.String(), "Signed in to openai-codex (account "+codexAccount+")") {
		t.Errorf("login output:\n%s", out)
	}
	tokenFile := filepath.Join(dir, "state", "auth.json")
	if fi, err := os.Stat(tokenFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v, want mode 600", err, fi)
	}

	// A chat turn through the signed-in provider.
	access1, _, _, _ := f.state()
	stdout, stderr, err := run(t, "agent", "-m", "hello", "--config", cfg)
	if err != nil || strings.TrimSpace(stdout) != "Codex says hi." {
		_, _, _, refused := f.state()
		t.Fatalf("agent -m: %v, stdout %q, stderr %q, refused %q", err, stdout, stderr, refused)
	}
	reqs := f.llm.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer "+access1 {
		t.Errorf("bearer %q, want the signed-in access token", got)
	}
	if reqs[0].Model != "gpt-5-codex" {
		t.Errorf("model %q, want the prefix stripped", reqs[0].Model)
	}

	// 1. The stored expiry has passed: the token is renewed before the call.
	setExpiry(t, tokenFile, time.Now().Add(-time.Hour))
	stdout, stderr, err = run(t, "agent", "-m", "again", "--config", cfg)
	access2, _, refreshes, refused := f.state()
	if err != nil || strings.TrimSpace(stdout) != "Codex says hi." {
		t.Fatalf("agent -m with an expired token: %v, stdout %q, stderr %q, refused %q", err, stdout, stderr, refused)
	}
	if refreshes != 1 || access2 == access1 {
		t.Errorf("refreshes %d (want 1), token renewed: %v", refreshes, access2 != access1)
	}
	if len(refused) != 0 {
		t.Errorf("the service refused %q: the renewal should come before the call", refused)
	}
	if got := f.llm.Requests()[1].Header.Get("Authorization"); got != "Bearer "+access2 {
		t.Errorf("second turn's bearer is not the renewed token")
	}
	// The second turn carried the first turn's reasoning item back.
	var replayed bool
	for _, it := range f.llm.Requests()[1].Input() {
		if it["type"] == "reasoning" && it["encrypted_content"] == "enc-e2e" {
			replayed = true
		}
	}
	if !replayed {
		t.Error("the encrypted reasoning of the first turn was not sent back")
	}

	// 2. The service expires the token before its stored expiry (a clock
	// ahead of ours): the 401 renews it and the call is repeated.
	f.mu.Lock()
	f.access = "at_rotated_at_the_service"
	f.mu.Unlock()
	stdout, stderr, err = run(t, "agent", "-m", "third", "--config", cfg)
	access3, _, refreshes, refused := f.state()
	if err != nil || strings.TrimSpace(stdout) != "Codex says hi." {
		t.Fatalf("agent -m after a 401: %v, stdout %q, stderr %q, refused %q", err, stdout, stderr, refused)
	}
	if refreshes != 2 || len(refused) != 1 || !strings.HasPrefix(refused[0], "auth:") {
		t.Errorf("after the 401: refreshes %d (want 2), refused %q (want one auth refusal)", refreshes, refused)
	}
	stored, _ := os.ReadFile(tokenFile)
	if !strings.Contains(string(stored), access3) {
		t.Error("the renewed token was not saved")
	}

	// 3. The refresh token is revoked at OpenAI and the access token has
	// expired: one clear message naming the login command, no call to the
	// model, no 401 and no token in what the user sees.
	f.mu.Lock()
	f.revoked = true
	f.mu.Unlock()
	setExpiry(t, tokenFile, time.Now().Add(-time.Minute))
	callsBefore := len(f.llm.Requests())
	stdout, stderr, err = run(t, "agent", "-m", "fourth", "--config", cfg)
	if err == nil {
		t.Fatalf("agent -m with a revoked sign-in succeeded: %q", stdout)
	}
	seen := stdout + stderr + err.Error()
	t.Logf("after revocation: %v\n%s", err, stderr)
	// The reply (agent -m's error) is what a chat user would get; stderr is
	// the operator's log.
	if n := strings.Count(err.Error(), "nanobot provider login openai-codex"); n != 1 {
		t.Errorf("the reply names the login command %d times, want once: %q", n, err)
	}
	if regexp.MustCompile(`\b401\b`).MatchString(seen) {
		t.Errorf("the user sees a raw 401: %q", seen)
	}
	_, refresh, _, _ := f.state()
	for _, secret := range []string{access3, refresh, "at_e2eCODEX", "rt_e2eCODEX"} {
		if strings.Contains(seen, secret) {
			t.Errorf("the user sees a token (%s…)", secret[:6])
		}
	}
	if n := len(f.llm.Requests()) - callsBefore; n != 0 {
		t.Errorf("%d model calls were made without a valid sign-in", n)
	}

	st, _, err := run(t, "provider", "status", "--config", cfg)
	if err != nil || !strings.Contains(st, "openai-codex") || !strings.Contains(st, "account "+codexAccount) {
		t.Errorf("provider status: %v\n%s", err, st)
	}
}

func setExpiry(t *testing.T, tokenFile string, at time.Time) {
	t.Helper()
	setSignInExpiry(t, tokenFile, "openai-codex", at)
}

func readAllString(resp *http.Response) (string, error) {
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
