package auth_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/redact"
	"github.com/nanobot-go/nanobot/internal/syncbuf"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/auth"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// harness is a Manager on a temporary instance, with a recorded log, a
// redactor, a fake clock and recorded device-flow waits.
type harness struct {
	m      *auth.Manager
	store  *auth.Store
	log    *syncbuf.Buffer
	redact *redact.Redactor
	clock  *clock

	mu    sync.Mutex
	waits []time.Duration
}

func newHarness(t *testing.T, gh *fakeGitHub, oa *fakeOpenAIAuth) *harness {
	t.Helper()
	eps := map[string]auth.Endpoints{}
	if gh != nil {
		eps[auth.Copilot] = auth.Endpoints{AuthBase: gh.srv.URL, ExchangeBase: gh.srv.URL}
	}
	if oa != nil {
		eps[auth.Codex] = auth.Endpoints{AuthBase: oa.srv.URL, RedirectPort: -1}
	}
	h := newHarnessWith(t, eps)
	if gh != nil {
		gh.now = h.clock.Now
	}
	return h
}

// newHarnessWith is a harness whose Manager signs in at eps.
func newHarnessWith(t *testing.T, eps map[string]auth.Endpoints) *harness {
	t.Helper()
	h := &harness{
		store:  auth.NewStore(filepath.Join(t.TempDir(), "state", "auth.json")),
		log:    &syncbuf.Buffer{},
		redact: redact.New(),
		clock:  &clock{now: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)},
	}
	h.m = auth.New(auth.Options{
		Store: h.store, Endpoints: eps, Redact: h.redact, Now: h.clock.Now,
		Logger: slog.New(slog.NewTextHandler(h.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Wait: func(ctx context.Context, d time.Duration) error {
			h.mu.Lock()
			h.waits = append(h.waits, d)
			h.mu.Unlock()
			h.clock.Advance(d)
			return ctx.Err()
		},
	})
	return h
}

func (h *harness) recordedWaits() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Duration(nil), h.waits...)
}

func TestCopilotDeviceFlow(t *testing.T) {
	gh := newFakeGitHub(t)
	gh.endpoint = "https://api.individual.githubcopilot.com"
	gh.polls = []string{"authorization_pending", "slow_down", "authorization_pending"}
	h := newHarness(t, gh, nil)

	var shown auth.Prompt
	c, err := h.m.LoginCopilot(t.Context(), func(p auth.Prompt) { shown = p })
	if err != nil {
		t.Fatalf("LoginCopilot: %v", err)
	}
	if shown.UserCode != "WDJB-MJHT" || shown.URL != "https://github.com/login/device" {
		t.Errorf("prompt = %+v, want the server's user code and verification URL", shown)
	}
	// 5 s as the server said, 5 s, then 10 s after slow_down (the server's
	// new interval; RFC 8628 says at least +5 s) until approval.
	want := []time.Duration{5 * time.Second, 5 * time.Second, 10 * time.Second, 10 * time.Second}
	if got := h.recordedWaits(); !equalDurations(got, want) {
		t.Errorf("poll intervals = %v, want %v", got, want)
	}
	if c.RefreshToken != gh.ghToken || c.AccessToken != gh.latest() || c.Endpoint != gh.endpoint {
		t.Errorf("credential = %+v, want the GitHub token, the Copilot token and its endpoint", redactedCred(c))
	}
	if !c.ExpiresAt.Equal(h.clock.Now().Add(gh.ttl).Truncate(time.Second)) {
		t.Errorf("expires at %v, want the Copilot token's expires_at", c.ExpiresAt)
	}
	stored, ok, err := h.store.Get(auth.Copilot)
	if err != nil || !ok || stored.AccessToken != c.AccessToken {
		t.Fatalf("stored = %v %v, want the new credential", ok, err)
	}
	assertPrivateFile(t, h.store.Path())
	assertNoSecrets(t, h, h.log.String(), gh.ghToken, c.AccessToken)
}

func TestDeviceFlowEndings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		polls []string
		want  error
	}{
		{"expired code", []string{"authorization_pending", "expired_token"}, auth.ErrCodeExpired},
		{"denied", []string{"access_denied"}, auth.ErrAccessDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gh := newFakeGitHub(t)
			gh.polls = tc.polls
			h := newHarness(t, gh, nil)
			_, err := h.m.LoginCopilot(t.Context(), func(auth.Prompt) {})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if _, ok, _ := h.store.Get(auth.Copilot); ok {
				t.Error("a failed login stored a credential")
			}
			if n := gh.exchanges.Load(); n != 0 {
				t.Errorf("%d Copilot token exchanges after a failed login, want 0", n)
			}
		})
	}
}

func TestDeviceFlowGivesUpAtExpiry(t *testing.T) {
	gh := newFakeGitHub(t)
	// The server keeps saying pending; the code's 900 s run out.
	gh.polls = make([]string, 1000)
	for i := range gh.polls {
		gh.polls[i] = "authorization_pending"
	}
	h := newHarness(t, gh, nil)
	_, err := h.m.LoginCopilot(t.Context(), func(auth.Prompt) {})
	if !errors.Is(err, auth.ErrCodeExpired) {
		t.Fatalf("err = %v, want ErrCodeExpired", err)
	}
	if got := len(h.recordedWaits()); got != 900/5 {
		t.Errorf("%d polls, want %d (900 s at 5 s)", got, 900/5)
	}
}

// browser plays the user's browser for a Codex PKCE login: it reads the
// authorization URL, optionally sends a forged callback first, then
// follows the outcome the fake's consent screen gives.
type browser struct {
	t            *testing.T
	oa           *fakeOpenAIAuth
	forge        bool
	deny         bool
	expire       bool
	forgedStatus int
	done         chan struct{}
}

func (b *browser) open(p auth.Prompt) {
	go func() {
		defer close(b.done)
		u, err := url.Parse(p.URL)
		if err != nil {
			b.t.Errorf("authorization URL %q: %v", p.URL, err)
			return
		}
		q := u.Query()
		if q.Get("code_challenge_method") != "S256" || q.Get("response_type") != "code" || q.Get("client_id") == "" {
			b.t.Errorf("authorization URL lacks PKCE S256 or client: %s", u.RawQuery)
		}
		redirect := q.Get("redirect_uri")
		if !strings.HasPrefix(redirect, "http://localhost:") || !strings.HasSuffix(redirect, "/auth/callback") {
			b.t.Errorf("redirect_uri = %q, want http://localhost:PORT/auth/callback", redirect)
		}
		if b.forge {
			code := b.oa.authorize(q.Get("code_challenge"), redirect)
			resp, err := http.Get(redirect + "?" + url.Values{"code": {code}, "state": {"attacker-state"}}.Encode())
			if err != nil {
				b.t.Errorf("forged callback: %v", err)
				return
			}
			resp.Body.Close()
			b.forgedStatus = resp.StatusCode
		}
		back := url.Values{"state": {q.Get("state")}}
		switch {
		case b.deny:
			back.Set("error", "access_denied")
		default:
			code := b.oa.authorize(q.Get("code_challenge"), redirect)
			if b.expire {
				b.oa.mu.Lock()
				b.oa.expired[code] = true
				b.oa.mu.Unlock()
			}
			back.Set("code", code)
		}
		resp, err := http.Get(redirect + "?" + back.Encode())
		if err != nil {
			b.t.Errorf("callback: %v", err)
			return
		}
		resp.Body.Close()
	}()
}

func TestCodexPKCELogin(t *testing.T) {
	oa := newFakeOpenAIAuth(t)
	h := newHarness(t, nil, oa)
	b := &browser{t: t, oa: oa, forge: true, done: make(chan struct{})}
	c, err := h.m.LoginCodex(t.Context(), b.open)
	<-b.done
	if err != nil {
		t.Fatalf("LoginCodex: %v", err)
	}
	if b.forgedStatus != http.StatusBadRequest {
		t.Errorf("forged callback answered %d, want 400", b.forgedStatus)
	}
	// The forged callback's code was never exchanged: one token call, the
	// real one, and the fake checked its code_verifier against the challenge.
	if n := oa.tokenCalls.Load(); n != 1 {
		t.Errorf("%d token calls, want 1 (the state-mismatched callback must not be exchanged)", n)
	}
	if c.AccountID != fakeAccountID {
		t.Errorf("account id = %q, want %q from the id_token", c.AccountID, fakeAccountID)
	}
	if c.RefreshToken == "" || c.AccessToken == "" || !c.ExpiresAt.Equal(h.clock.Now().Add(time.Hour)) {
		t.Errorf("credential = %+v, want access and refresh tokens expiring in 1h", redactedCred(c))
	}
	assertPrivateFile(t, h.store.Path())
	assertNoSecrets(t, h, h.log.String(), c.AccessToken, c.RefreshToken, c.IDToken)
}

func TestCodexPKCEFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		b      browser
		want   error
		inText string
	}{
		{name: "denied consent", b: browser{deny: true}, want: auth.ErrAccessDenied},
		{name: "expired code", b: browser{expire: true}, inText: "expired or already used"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oa := newFakeOpenAIAuth(t)
			h := newHarness(t, nil, oa)
			b := tc.b
			b.t, b.oa, b.done = t, oa, make(chan struct{})
			_, err := h.m.LoginCodex(t.Context(), b.open)
			<-b.done
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.inText) {
				t.Fatalf("err = %v, want %v / %q", err, tc.want, tc.inText)
			}
			if _, ok, _ := h.store.Get(auth.Codex); ok {
				t.Error("a failed login stored a credential")
			}
		})
	}
}

func TestCodexDeviceLogin(t *testing.T) {
	oa := newFakeOpenAIAuth(t)
	oa.devicePolls = 2
	h := newHarness(t, nil, oa)
	var shown auth.Prompt
	c, err := h.m.LoginCodexDevice(t.Context(), func(p auth.Prompt) { shown = p })
	if err != nil {
		t.Fatalf("LoginCodexDevice: %v", err)
	}
	if shown.UserCode != "QXZT-8842" || shown.URL != oa.srv.URL+"/codex/device" {
		t.Errorf("prompt = %+v", shown)
	}
	if got := h.recordedWaits(); len(got) != 3 || got[0] != 5*time.Second {
		t.Errorf("waits = %v, want three 5 s polls", got)
	}
	if c.AccountID != fakeAccountID {
		t.Errorf("account id = %q", c.AccountID)
	}
}

func TestCodexRefreshFailureIsSignedOut(t *testing.T) {
	oa := newFakeOpenAIAuth(t)
	h := newHarness(t, nil, oa)
	login(t, h, oa)
	h.clock.Advance(2 * time.Hour)
	oa.mu.Lock()
	oa.refreshOK = false
	oa.mu.Unlock()

	_, err := h.m.Token(t.Context(), auth.Codex)
	var se *providers.SignInError
	if !errors.As(err, &se) || se.Provider != auth.Codex {
		t.Fatalf("err = %v (%T), want *providers.SignInError for openai-codex", err, err)
	}
	if !strings.Contains(err.Error(), "run `nanobot provider login openai-codex`") {
		t.Errorf("message %q does not name the command", err)
	}
	if providers.IsTransient(err) {
		t.Error("a refused refresh token must not be retried")
	}
}

func TestCodexRefreshServerErrorIsTransient(t *testing.T) {
	oa := newFakeOpenAIAuth(t)
	h := newHarness(t, nil, oa)
	login(t, h, oa)
	h.clock.Advance(2 * time.Hour)
	oa.mu.Lock()
	oa.down = true
	oa.mu.Unlock()
	_, err := h.m.Token(t.Context(), auth.Codex)
	var se *providers.SignInError
	if errors.As(err, &se) || !providers.IsTransient(err) {
		t.Fatalf("err = %v, want a transient provider error (not signed out)", err)
	}
}

// TestClockSkewMargin: a token is renewed when it expires within the
// margin, not only once it has expired, so a clock a little behind the
// server's never sends an expired token.
func TestClockSkewMargin(t *testing.T) {
	oa := newFakeOpenAIAuth(t)
	h := newHarness(t, nil, oa)
	c0 := login(t, h, oa)

	h.clock.Advance(time.Hour - auth.DefaultMargin - time.Second)
	c1, err := h.m.Token(t.Context(), auth.Codex)
	if err != nil || c1.AccessToken != c0.AccessToken || oa.refreshCalls.Load() != 0 {
		t.Fatalf("1 s before the margin: token changed=%v refreshes=%d err=%v, want the same token", c1.AccessToken != c0.AccessToken, oa.refreshCalls.Load(), err)
	}
	h.clock.Advance(2 * time.Second) // within the margin, still before expiry
	c2, err := h.m.Token(t.Context(), auth.Codex)
	if err != nil || c2.AccessToken == c0.AccessToken || oa.refreshCalls.Load() != 1 {
		t.Fatalf("inside the margin: token changed=%v refreshes=%d err=%v, want one renewal", c2.AccessToken != c0.AccessToken, oa.refreshCalls.Load(), err)
	}
	if !c2.ExpiresAt.After(h.clock.Now().Add(auth.DefaultMargin)) {
		t.Errorf("renewed token expires %v, want beyond the margin", c2.ExpiresAt)
	}
	stored, _, _ := h.store.Get(auth.Codex)
	if stored.AccessToken != c2.AccessToken || stored.RefreshToken != c2.RefreshToken {
		t.Error("the renewed (rotated) tokens were not stored")
	}
}

func TestNotSignedIn(t *testing.T) {
	h := newHarness(t, nil, nil)
	_, err := h.m.Token(t.Context(), auth.Copilot)
	var se *providers.SignInError
	if !errors.As(err, &se) || se.Reason != "not signed in" {
		t.Fatalf("err = %v, want SignInError not signed in", err)
	}
}

func TestLogout(t *testing.T) {
	oa := newFakeOpenAIAuth(t)
	h := newHarness(t, nil, oa)
	login(t, h, oa)
	if found, err := h.m.Logout(auth.Codex); !found || err != nil {
		t.Fatalf("Logout = %v, %v", found, err)
	}
	var se *providers.SignInError
	if _, err := h.m.Token(t.Context(), auth.Codex); !errors.As(err, &se) {
		t.Fatalf("after logout: err = %v, want SignInError", err)
	}
	if found, _ := h.m.Logout(auth.Codex); found {
		t.Error("second logout found a credential")
	}
}

func login(t *testing.T, h *harness, oa *fakeOpenAIAuth) auth.Credential {
	t.Helper()
	b := &browser{t: t, oa: oa, done: make(chan struct{})}
	c, err := h.m.LoginCodex(t.Context(), b.open)
	<-b.done
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	return c
}

func assertPrivateFile(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s mode = %o, want 600", path, fi.Mode().Perm())
	}
}

// assertNoSecrets checks that text holds none of the secrets and that the
// redactor learnt each of them.
func assertNoSecrets(t *testing.T, h *harness, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s == "" {
			continue
		}
		if strings.Contains(text, s) {
			t.Errorf("a token appears in the log")
		}
		if got := h.redact.String("x " + s + " y"); strings.Contains(got, s) {
			t.Errorf("the redactor does not mask a token it was given")
		}
	}
}

func redactedCred(c auth.Credential) map[string]any {
	return map[string]any{"access": c.AccessToken != "", "refresh": c.RefreshToken != "", "expires": c.ExpiresAt, "account": c.AccountID, "endpoint": c.Endpoint}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
