package auth_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/auth"
	"github.com/nanobot-go/nanobot/providers/backends"
)

// fakeCopilotAPI is api.githubcopilot.com's chat endpoint: it accepts only
// the newest unexpired Copilot token the fake GitHub issued, and only with
// the editor headers the service requires.
type fakeCopilotAPI struct {
	srv *httptest.Server
	gh  *fakeGitHub

	mu sync.Mutex
	// refuse holds tokens the service has withdrawn before their expiry.
	refuse map[string]bool
	models []string
	bad    []string

	calls atomic.Int32
}

func newFakeCopilotAPI(t *testing.T, gh *fakeGitHub) *fakeCopilotAPI {
	f := &fakeCopilotAPI{gh: gh, refuse: map[string]bool{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		if r.Method != http.MethodPost || r.URL.Path != "/chat/completions" {
			writeJSON(w, 404, map[string]any{"error": map[string]any{"message": "no route " + r.URL.Path}})
			return
		}
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		f.mu.Lock()
		refused := f.refuse[tok]
		f.mu.Unlock()
		if tok == "" || tok != gh.latest() || refused {
			writeJSON(w, 401, map[string]any{"error": map[string]any{"message": "unauthorized: token expired"}})
			return
		}
		for _, h := range []string{"Editor-Version", "Editor-Plugin-Version", "Copilot-Integration-Id"} {
			if r.Header.Get(h) == "" {
				f.mu.Lock()
				f.bad = append(f.bad, "missing "+h)
				f.mu.Unlock()
				writeJSON(w, 400, map[string]any{"error": map[string]any{"message": "missing " + h}})
				return
			}
		}
		var body struct {
			Model string `json:"model"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		f.models = append(f.models, body.Model)
		f.mu.Unlock()
		writeJSON(w, 200, map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": body.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": "hello from copilot"}}},
			"usage": map[string]any{"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
		})
	}))
	t.Cleanup(f.srv.Close)
	gh.endpoint = f.srv.URL
	return f
}

// copilotSetup signs in through the device flow and builds the
// github-copilot provider the way cmd does: registry resolution, the
// OpenAI-compatible backend, the auth transport.
func copilotSetup(t *testing.T, retry bool) (*harness, *fakeGitHub, *fakeCopilotAPI, providers.Provider) {
	t.Helper()
	gh := newFakeGitHub(t)
	api := newFakeCopilotAPI(t, gh)
	h := newHarness(t, gh, nil)
	if _, err := h.m.LoginCopilot(t.Context(), func(auth.Prompt) {}); err != nil {
		t.Fatalf("login: %v", err)
	}
	res, err := providers.Resolve("github-copilot/gpt-4o", "", map[string]providers.Settings{"github-copilot": {SignedIn: true}})
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	if res.APIBase != "https://api.githubcopilot.com" || res.Model != "gpt-4o" {
		t.Fatalf("resolution = %s %s, want the default endpoint and the bare model", res.APIBase, res.Model)
	}
	opts := providers.Options{Backends: backends.All(), SignIn: h.m.Client, NoRetry: !retry}
	if retry {
		opts.Retry = &providers.RetryPolicy{Delays: []time.Duration{time.Millisecond, time.Millisecond}}
	}
	p, err := providers.New(res, opts)
	if err != nil {
		t.Fatalf("providers.New: %v", err)
	}
	return h, gh, api, p
}

func chatReq() providers.ChatRequest {
	return providers.ChatRequest{Messages: []providers.Message{{Role: "user", Content: "hi"}}}
}

func TestCopilotChatEndToEnd(t *testing.T) {
	_, gh, api, p := copilotSetup(t, false)
	resp, err := p.Chat(t.Context(), chatReq())
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if resp.Content != "hello from copilot" {
		t.Errorf("content = %q", resp.Content)
	}
	if n := gh.exchanges.Load(); n != 1 {
		t.Errorf("%d exchanges, want 1 (the login's token is still fresh)", n)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.models) != 1 || api.models[0] != "gpt-4o" || len(api.bad) != 0 {
		t.Errorf("API saw models %v, problems %v", api.models, api.bad)
	}
}

// TestCopilotSingleFlightRenewal: twenty calls that find the Copilot token
// expired cause exactly one exchange, and every call then succeeds with
// the new token.
func TestCopilotSingleFlightRenewal(t *testing.T) {
	h, gh, _, p := copilotSetup(t, false)
	h.clock.Advance(gh.ttl) // the login's token has expired
	release := make(chan struct{})
	gh.mu.Lock()
	gh.release = release
	gh.mu.Unlock()

	const n = 20
	var started sync.WaitGroup
	started.Add(n)
	errs := make(chan error, n)
	for range n {
		go func() {
			started.Done()
			_, err := p.Chat(t.Context(), chatReq())
			errs <- err
		}()
	}
	started.Wait()
	// Hold the one exchange until it has begun, so the others pile up
	// behind it rather than finding a fresh token.
	for gh.exchanges.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("Chat: %v", err)
		}
	}
	if got := gh.exchanges.Load(); got != 2 {
		t.Errorf("%d exchanges, want 2 (login + one renewal for %d concurrent calls)", got, n)
	}
}

// TestCopilotRefusedTokenIsRenewed: a token the service withdraws before
// its expiry is renewed once and the call repeated.
func TestCopilotRefusedTokenIsRenewed(t *testing.T) {
	_, gh, api, p := copilotSetup(t, false)
	api.mu.Lock()
	api.refuse[gh.latest()] = true
	api.mu.Unlock()
	resp, err := p.Chat(t.Context(), chatReq())
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if resp.Content != "hello from copilot" || gh.exchanges.Load() != 2 || api.calls.Load() != 2 {
		t.Errorf("content %q, %d exchanges, %d API calls; want the answer after one renewal and one repeat", resp.Content, gh.exchanges.Load(), api.calls.Load())
	}
}

// TestCopilotRevokedSignIn: once GitHub refuses the stored token, a call
// fails with one SignInError naming the login command: no API call, no
// retries.
func TestCopilotRevokedSignIn(t *testing.T) {
	h, gh, api, p := copilotSetup(t, true)
	h.clock.Advance(gh.ttl)
	gh.mu.Lock()
	gh.revoked = true
	gh.mu.Unlock()

	_, err := p.Chat(t.Context(), chatReq())
	var se *providers.SignInError
	if !errors.As(err, &se) || se.Provider != auth.Copilot {
		t.Fatalf("err = %v, want a SignInError for github-copilot", err)
	}
	if !strings.Contains(se.Error(), "nanobot provider login github-copilot") {
		t.Errorf("message %q lacks the command", se.Error())
	}
	if n := api.calls.Load(); n != 0 {
		t.Errorf("%d calls reached the chat API without a valid token", n)
	}
	if n := gh.exchanges.Load(); n != 2 {
		t.Errorf("%d exchanges, want 2 (login + one refused; a signed-out error is not retried)", n)
	}
	if strings.Contains(err.Error(), gh.ghToken) {
		t.Error("the error carries the GitHub token")
	}
}
