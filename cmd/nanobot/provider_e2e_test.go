package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeCopilotService is github.com's device flow, api.github.com's Copilot
// token exchange and the Copilot chat API on one loopback server.
type fakeCopilotService struct {
	srv     *httptest.Server
	mu      sync.Mutex
	revoked bool
	chats   int
}

const e2eGitHubToken = "gho_e2eGITHUBtoken0123456789"

func newFakeCopilotService(t *testing.T) *fakeCopilotService {
	f := &fakeCopilotService{}
	copilotToken := "tid=e2e-copilot-token;exp=1"
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("POST /login/device/code", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, map[string]any{"device_code": "dc", "user_code": "E2E-CODE", "verification_uri": "https://github.com/login/device", "expires_in": 900, "interval": 1})
	})
	mux.HandleFunc("POST /login/oauth/access_token", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, map[string]any{"access_token": e2eGitHubToken, "token_type": "bearer"})
	})
	mux.HandleFunc("GET /copilot_internal/v2/token", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		revoked := f.revoked
		f.mu.Unlock()
		if revoked || r.Header.Get("Authorization") != "token "+e2eGitHubToken {
			reply(w, 401, map[string]any{"message": "Bad credentials"})
			return
		}
		reply(w, 200, map[string]any{"token": copilotToken, "expires_at": time.Now().Add(time.Hour).Unix(), "endpoints": map[string]any{"api": f.srv.URL}})
	})
	mux.HandleFunc("POST /chat/completions", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.chats++
		f.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+copilotToken || r.Header.Get("Copilot-Integration-Id") == "" || r.Header.Get("Editor-Version") == "" {
			reply(w, 401, map[string]any{"error": map[string]any{"message": "bad token or headers"}})
			return
		}
		var req struct {
			Stream bool `json:"stream"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if !req.Stream {
			reply(w, 200, map[string]any{"id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
				"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": "Copilot says hi."}}}})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, chunk := range []string{
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":"Copilot says hi."}}]}`,
			`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", chunk)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// TestProviderLoginCopilotEndToEnd: `nanobot provider login github-copilot`
// against the fake service, then status, a chat through the signed-in
// provider, one clear message once the sign-in is revoked, and logout.
func TestProviderLoginCopilotEndToEnd(t *testing.T) {
	f := newFakeCopilotService(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	body := fmt.Sprintf(`{
	  "agents": {"defaults": {"model": "github-copilot/gpt-4o", "workspace": %q}},
	  "providers": {"github-copilot": {"signIn": {"authBase": %q, "exchangeBase": %q}}}
	}`, filepath.Join(dir, "ws"), f.srv.URL, f.srv.URL)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}

	out, _, err := run(t, "provider", "login", "copilot", "--config", cfg)
	if err != nil {
		t.Fatalf("login: %v\n%s", err, out)
	}
	if !strings.Contains(out, "E2E-CODE") || !strings.Contains(out, "Signed in to github-copilot") {
		t.Errorf("login output:\n%s", out)
	}
	tokenFile := filepath.Join(dir, "state", "auth.json")
	if fi, err := os.Stat(tokenFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v, want mode 600", err, fi)
	}

	out, _, err = run(t, "provider", "status", "--config", cfg)
	if err != nil || !strings.Contains(out, "github-copilot") || !strings.Contains(out, "token expires") {
		t.Errorf("provider status: %v\n%s", err, out)
	}
	out, _, err = run(t, "status", "--config", cfg)
	if err != nil || !strings.Contains(out, "sign-ins:") || !strings.Contains(out, "provider:   github-copilot") {
		t.Errorf("status: %v\n%s", err, out)
	}
	for _, secret := range []string{e2eGitHubToken, "e2e-copilot-token"} {
		if strings.Contains(out, secret) {
			t.Error("status prints a token")
		}
	}

	out, stderr, err := run(t, "agent", "-m", "hello", "--config", cfg)
	if err != nil || strings.TrimSpace(out) != "Copilot says hi." {
		t.Fatalf("agent -m: %v, stdout %q, stderr %q", err, out, stderr)
	}

	// GitHub revokes the grant; the stored Copilot token is dropped so the
	// next call must exchange again.
	f.mu.Lock()
	f.revoked = true
	chatsBefore := f.chats
	f.mu.Unlock()
	var stored map[string]map[string]any
	b, _ := os.ReadFile(tokenFile)
	if err := json.Unmarshal(b, &stored); err != nil {
		t.Fatal(err)
	}
	stored["github-copilot"]["expiresAt"] = time.Now().Add(-time.Hour)
	b, _ = json.Marshal(stored)
	if err := os.WriteFile(tokenFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, err = run(t, "agent", "-m", "again", "--config", cfg)
	if err == nil {
		t.Fatalf("agent -m after revocation succeeded: %q", out)
	}
	t.Logf("after revocation: %v\n%s", err, stderr)
	if n := strings.Count(stderr+err.Error(), "nanobot provider login github-copilot"); n == 0 {
		t.Errorf("no login hint: err %v, stderr %q", err, stderr)
	}
	// A word of its own: the test's temp folder names hold random digits.
	if regexp.MustCompile(`\b401\b`).MatchString(stderr) || strings.Contains(stderr, e2eGitHubToken) {
		t.Errorf("stderr shows a raw 401 or the token: %q", stderr)
	}
	f.mu.Lock()
	if f.chats != chatsBefore {
		t.Errorf("%d chat calls were made without a valid sign-in", f.chats-chatsBefore)
	}
	f.mu.Unlock()

	out, _, err = run(t, "provider", "logout", "github-copilot", "--config", cfg)
	if err != nil || !strings.Contains(out, "signed out") {
		t.Errorf("logout: %v\n%s", err, out)
	}
	out, _, _ = run(t, "provider", "status", "--config", cfg)
	if !strings.Contains(out, "(none") {
		t.Errorf("status after logout:\n%s", out)
	}
}
