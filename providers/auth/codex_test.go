package auth_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/auth"
)

// fakeCodexAPI is the Codex Responses endpoint: it wants the current
// access token, the ChatGPT account id and the Codex headers.
type fakeCodexAPI struct {
	srv    *httptest.Server
	oa     *fakeOpenAIAuth
	mu     sync.Mutex
	bad    []string
	calls  atomic.Int32
	tokens map[string]bool
}

func newFakeCodexAPI(t *testing.T, oa *fakeOpenAIAuth) *fakeCodexAPI {
	f := &fakeCodexAPI{oa: oa, tokens: map[string]bool{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		var problems []string
		if r.URL.Path != "/backend-api/codex/responses" {
			problems = append(problems, "path "+r.URL.Path)
		}
		if r.Header.Get("Chatgpt-Account-Id") != fakeAccountID {
			problems = append(problems, "account id "+r.Header.Get("Chatgpt-Account-Id"))
		}
		if r.Header.Get("OpenAI-Beta") != "responses=experimental" || r.Header.Get("Originator") == "" {
			problems = append(problems, "codex headers")
		}
		f.mu.Lock()
		f.bad = append(f.bad, problems...)
		f.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")] = true
		f.mu.Unlock()
		writeJSON(w, 200, map[string]any{"id": "resp_1", "status": "completed"})
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func codexClient(t *testing.T, h *harness, api *fakeCodexAPI) *http.Client {
	t.Helper()
	res, err := providers.Resolve("openai-codex/gpt-5-codex", "", map[string]providers.Settings{"openai-codex": {SignedIn: true, APIBase: api.srv.URL + "/backend-api/codex"}})
	if err != nil {
		t.Fatal(err)
	}
	hc, err := h.m.Client(res, nil)
	if err != nil {
		t.Fatal(err)
	}
	return hc
}

// TestCodexConcurrentRefreshOnce: OpenAI rotates refresh tokens and
// refuses a used one, so twenty calls finding the access token expired
// must cause exactly one refresh, and all carry the new token.
func TestCodexConcurrentRefreshOnce(t *testing.T) {
	oa := newFakeOpenAIAuth(t)
	api := newFakeCodexAPI(t, oa)
	h := newHarness(t, nil, oa)
	login(t, h, oa)
	hc := codexClient(t, h, api)
	h.clock.Advance(2 * time.Hour)

	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := hc.Post(api.srv.URL+"/backend-api/codex/responses", "application/json", strings.NewReader(`{"model":"gpt-5-codex"}`))
			if err != nil {
				errs <- err
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				errs <- &providers.Error{StatusCode: resp.StatusCode}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("call: %v", err)
	}
	if got := oa.refreshCalls.Load(); got != 1 {
		t.Errorf("%d refreshes, want 1", got)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.tokens) != 1 || len(api.bad) != 0 {
		t.Errorf("API saw %d distinct tokens (want 1, the refreshed one) and problems %v", len(api.tokens), api.bad)
	}
}

// TestTwoProcessesShareOneRefresh: the gateway and a CLI command are two
// Managers on one token file. The second to find the token expired adopts
// the first one's refresh (under the file lock) instead of spending the
// already-rotated refresh token.
func TestTwoProcessesShareOneRefresh(t *testing.T) {
	oa := newFakeOpenAIAuth(t)
	h := newHarness(t, nil, oa)
	login(t, h, oa)
	other := auth.New(auth.Options{Store: h.store, Endpoints: map[string]auth.Endpoints{auth.Codex: {AuthBase: oa.srv.URL}}, Now: h.clock.Now})
	// other loads the soon-stale credential now.
	if _, err := other.Token(t.Context(), auth.Codex); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(2 * time.Hour)

	c1, err := h.m.Token(t.Context(), auth.Codex)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := other.Token(t.Context(), auth.Codex)
	if err != nil {
		t.Fatalf("second process: %v (it must adopt the stored refresh, not reuse the rotated token)", err)
	}
	if c1.AccessToken != c2.AccessToken || oa.refreshCalls.Load() != 1 {
		t.Errorf("same token %v, %d refreshes; want the same token from one refresh", c1.AccessToken == c2.AccessToken, oa.refreshCalls.Load())
	}
}
