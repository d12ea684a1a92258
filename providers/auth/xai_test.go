package auth_test

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/auth"
)

func newXAIHarness(t *testing.T, fx *fakeXAIAuth) *harness {
	t.Helper()
	return newHarnessWith(t, map[string]auth.Endpoints{auth.XAIGrok: {AuthBase: fx.srv.URL}})
}

// xaiBrowser plays the user's browser for an xAI sign-in: it checks the
// authorization URL, optionally sends a callback with a forged state
// first, asks the callback's CORS preflight as xAI's accounts page does,
// then comes back with the code the fake's consent screen issues.
type xaiBrowser struct {
	t  *testing.T
	fx *fakeXAIAuth
	// forge sends a callback with another state first; deny comes back
	// with access_denied instead of a code.
	forge, deny bool
	done        chan struct{}

	// What the browser saw.
	authURL      *url.URL
	forgedStatus int
	preflight    *http.Response
	callback     *http.Response
}

func (b *xaiBrowser) open(p auth.Prompt) {
	go func() {
		defer close(b.done)
		u, err := url.Parse(p.URL)
		if err != nil {
			b.t.Errorf("authorization URL %q: %v", p.URL, err)
			return
		}
		b.authURL = u
		q := u.Query()
		redirect := q.Get("redirect_uri")
		if b.forge {
			code := b.fx.authorize(q.Get("code_challenge"), redirect)
			resp, err := http.Get(redirect + "?" + url.Values{"code": {code}, "state": {"attacker-state"}}.Encode())
			if err != nil {
				b.t.Errorf("forged callback: %v", err)
				return
			}
			resp.Body.Close()
			b.forgedStatus = resp.StatusCode
		}
		pre, _ := http.NewRequest(http.MethodOptions, redirect, nil)
		pre.Header.Set("Origin", "https://accounts.x.ai")
		pre.Header.Set("Access-Control-Request-Method", "GET")
		pre.Header.Set("Access-Control-Request-Private-Network", "true")
		if b.preflight, err = http.DefaultClient.Do(pre); err != nil {
			b.t.Errorf("preflight: %v", err)
			return
		}
		b.preflight.Body.Close()
		back := url.Values{"state": {q.Get("state")}}
		if b.deny {
			back.Set("error", "access_denied")
		} else {
			back.Set("code", b.fx.authorize(q.Get("code_challenge"), redirect))
		}
		get, _ := http.NewRequest(http.MethodGet, redirect+"?"+back.Encode(), nil)
		get.Header.Set("Origin", "https://accounts.x.ai")
		if b.callback, err = http.DefaultClient.Do(get); err != nil {
			b.t.Errorf("callback: %v", err)
			return
		}
		b.callback.Body.Close()
	}()
}

func xaiLogin(t *testing.T, h *harness, fx *fakeXAIAuth) auth.Credential {
	t.Helper()
	b := &xaiBrowser{t: t, fx: fx, done: make(chan struct{})}
	c, err := h.m.LoginXAI(t.Context(), b.open, nil)
	<-b.done
	if err != nil {
		t.Fatalf("LoginXAI: %v", err)
	}
	return c
}

// TestXAILogin: discovery at the issuer, the authorization URL of the Grok
// CLI client (client id, scopes, PKCE S256, state, nonce, the loopback
// redirect on 127.0.0.1), a forged callback refused and not redeemed, the
// callback answering xAI's accounts page's CORS preflight, the code
// redeemed with the verifier, the account named from userinfo, and the
// tokens stored 0600 and kept out of the log.
func TestXAILogin(t *testing.T) {
	fx := newFakeXAIAuth(t)
	h := newXAIHarness(t, fx)
	b := &xaiBrowser{t: t, fx: fx, forge: true, done: make(chan struct{})}
	c, err := h.m.LoginXAI(t.Context(), b.open, nil)
	<-b.done
	if err != nil {
		t.Fatalf("LoginXAI: %v", err)
	}

	u := b.authURL
	q := u.Query()
	if got := u.Scheme + "://" + u.Host + u.Path; got != fx.srv.URL+"/oauth2/auth" {
		t.Errorf("authorization endpoint %s, want the one discovery named", got)
	}
	wantScopes := []string{"openid", "profile", "email", "offline_access", "grok-cli:access", "api:access",
		"conversations:read", "conversations:write", "workspaces:read", "workspaces:write"}
	if got := strings.Fields(q.Get("scope")); !slices.Equal(got, wantScopes) {
		t.Errorf("scope = %q, want %q", got, wantScopes)
	}
	for k, want := range map[string]string{
		"client_id": auth.DefaultXAIClientID, "response_type": "code", "code_challenge_method": "S256", "referrer": "nanobot",
	} {
		if q.Get(k) != want {
			t.Errorf("%s = %q, want %q", k, q.Get(k), want)
		}
	}
	if len(q.Get("code_challenge")) != 43 || len(q.Get("state")) < 32 || len(q.Get("nonce")) < 32 {
		t.Errorf("code_challenge %q (want a 43-character S256 digest), state %q, nonce %q", q.Get("code_challenge"), q.Get("state"), q.Get("nonce"))
	}
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Scheme != "http" || redirect.Hostname() != "127.0.0.1" || redirect.Port() == "" || redirect.Path != "/callback" {
		t.Errorf("redirect_uri = %q, want http://127.0.0.1:PORT/callback", q.Get("redirect_uri"))
	}

	if b.forgedStatus != http.StatusBadRequest {
		t.Errorf("forged callback answered %d, want 400", b.forgedStatus)
	}
	// One token call: the forged callback's code was never redeemed, and
	// the fake checked the verifier against the challenge.
	if n := fx.tokenCalls.Load(); n != 1 {
		t.Errorf("%d token calls, want 1", n)
	}
	if b.preflight.StatusCode != http.StatusNoContent || b.preflight.Header.Get("Access-Control-Allow-Origin") != "https://accounts.x.ai" ||
		b.preflight.Header.Get("Access-Control-Allow-Private-Network") != "true" {
		t.Errorf("preflight answered %d with %v", b.preflight.StatusCode, b.preflight.Header)
	}
	if b.callback.StatusCode != http.StatusOK || b.callback.Header.Get("Access-Control-Allow-Origin") != "https://accounts.x.ai" {
		t.Errorf("callback answered %d with %v", b.callback.StatusCode, b.callback.Header)
	}

	access, refresh := fx.current()
	if c.AccessToken != access || c.RefreshToken != refresh || c.AccountID != fakeXAIEmail {
		t.Errorf("credential = %+v, want the fake's tokens and the userinfo email", redactedCred(c))
	}
	if !c.ExpiresAt.Equal(h.clock.Now().Add(time.Hour)) {
		t.Errorf("expires at %v, want in expires_in (1h)", c.ExpiresAt)
	}
	stored, ok, err := h.store.Get(auth.XAIGrok)
	if err != nil || !ok || stored.AccessToken != c.AccessToken {
		t.Fatalf("stored = %v %v, want the new credential under %s", ok, err, auth.XAIGrok)
	}
	if p := fx.shapeProblems(); len(p) != 0 {
		t.Errorf("the token endpoint saw %q", p)
	}
	assertPrivateFile(t, h.store.Path())
	assertNoSecrets(t, h, h.log.String(), c.AccessToken, c.RefreshToken)
}

func TestXAILoginDenied(t *testing.T) {
	fx := newFakeXAIAuth(t)
	h := newXAIHarness(t, fx)
	b := &xaiBrowser{t: t, fx: fx, deny: true, done: make(chan struct{})}
	_, err := h.m.LoginXAI(t.Context(), b.open, nil)
	<-b.done
	if !errors.Is(err, auth.ErrAccessDenied) {
		t.Fatalf("err = %v, want ErrAccessDenied", err)
	}
	if _, ok, _ := h.store.Get(auth.XAIGrok); ok {
		t.Error("a denied login stored a credential")
	}
}

// TestXAIPastedCallback: with the browser on another machine the loopback
// is never reached; the user pastes the address the browser ended on (or
// just the code) and the login finishes from it. A paste from another
// attempt is refused without redeeming anything.
func TestXAIPastedCallback(t *testing.T) {
	for _, tc := range []struct {
		name  string
		paste func(code, state, redirect string) string
		want  error
	}{
		{name: "callback address", paste: func(code, state, redirect string) string {
			return "  " + redirect + "?" + url.Values{"code": {code}, "state": {state}}.Encode() + "\n"
		}},
		{name: "address without scheme", paste: func(code, state, redirect string) string {
			return strings.TrimPrefix(redirect, "http://") + "?" + url.Values{"code": {code}, "state": {state}}.Encode()
		}},
		{name: "bare code", paste: func(code, _, _ string) string { return code }},
		{name: "another attempt's address", want: auth.ErrPasteUnusable, paste: func(code, _, redirect string) string {
			return redirect + "?" + url.Values{"code": {code}, "state": {"state-of-another-attempt"}}.Encode()
		}},
		{name: "not a code", want: auth.ErrPasteUnusable, paste: func(string, string, string) string { return "I could not sign in" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFakeXAIAuth(t)
			h := newXAIHarness(t, fx)
			pasted := make(chan string, 1)
			c, err := h.m.LoginXAI(t.Context(), func(p auth.Prompt) {
				u, _ := url.Parse(p.URL)
				q := u.Query()
				code := fx.authorize(q.Get("code_challenge"), q.Get("redirect_uri"))
				pasted <- tc.paste(code, q.Get("state"), q.Get("redirect_uri"))
			}, pasted)
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("err = %v, want %v", err, tc.want)
				}
				if n := fx.tokenCalls.Load(); n != 0 {
					t.Errorf("%d token calls for an unusable paste, want 0", n)
				}
				return
			}
			if err != nil {
				t.Fatalf("LoginXAI: %v", err)
			}
			if access, _ := fx.current(); c.AccessToken != access {
				t.Error("the pasted code did not give the fake's token")
			}
		})
	}
}

// TestXAIPasteChannelClosed: stdin at its end closes the paste channel;
// the login keeps waiting for the browser.
func TestXAIPasteChannelClosed(t *testing.T) {
	fx := newFakeXAIAuth(t)
	h := newXAIHarness(t, fx)
	pasted := make(chan string)
	close(pasted)
	b := &xaiBrowser{t: t, fx: fx, done: make(chan struct{})}
	_, err := h.m.LoginXAI(t.Context(), b.open, pasted)
	<-b.done
	if err != nil {
		t.Fatalf("LoginXAI: %v", err)
	}
}

// TestXAIDiscoveryIsChecked: a discovery document naming another issuer,
// or endpoints off the issuer's origin, ends the login before anything is
// listened on or sent.
func TestXAIDiscoveryIsChecked(t *testing.T) {
	for _, tc := range []struct {
		name   string
		doc    map[string]any
		inText string
	}{
		{"another issuer", map[string]any{"issuer": "https://auth.example.com"}, "names the issuer"},
		{"token endpoint elsewhere", map[string]any{"token_endpoint": "https://collector.example.com/token"}, "token endpoint"},
		{"authorization endpoint missing", map[string]any{"authorization_endpoint": nil}, "authorization endpoint"},
		{"userinfo with credentials", map[string]any{"userinfo_endpoint": "http://user:pw@127.0.0.1/userinfo"}, "userinfo endpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFakeXAIAuth(t)
			fx.discovery = tc.doc
			h := newXAIHarness(t, fx)
			prompted := false
			_, err := h.m.LoginXAI(t.Context(), func(auth.Prompt) { prompted = true }, nil)
			if err == nil || !strings.Contains(err.Error(), tc.inText) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.inText)
			}
			if prompted {
				t.Error("the user was sent to an authorization URL from a refused discovery document")
			}
		})
	}
	h := newHarnessWith(t, map[string]auth.Endpoints{auth.XAIGrok: {AuthBase: "http://auth.example.com"}})
	if _, err := h.m.LoginXAI(t.Context(), func(auth.Prompt) {}, nil); err == nil || !strings.Contains(err.Error(), "not an https URL") {
		t.Errorf("a plain-http issuer off loopback: err = %v", err)
	}
}

// TestXAIRefreshMargin: xAI tokens are renewed 5 minutes before they
// expire, not 2; the refresh rotates the refresh token and both new tokens
// are stored.
func TestXAIRefreshMargin(t *testing.T) {
	fx := newFakeXAIAuth(t)
	h := newXAIHarness(t, fx)
	c0 := xaiLogin(t, h, fx)

	h.clock.Advance(time.Hour - auth.XAIMargin - time.Second)
	c1, err := h.m.Token(t.Context(), auth.XAIGrok)
	if err != nil || c1.AccessToken != c0.AccessToken || fx.refreshCalls.Load() != 0 {
		t.Fatalf("1 s before the margin: changed=%v refreshes=%d err=%v, want the same token", c1.AccessToken != c0.AccessToken, fx.refreshCalls.Load(), err)
	}
	h.clock.Advance(2 * time.Second)
	c2, err := h.m.Token(t.Context(), auth.XAIGrok)
	if err != nil || c2.AccessToken == c0.AccessToken || fx.refreshCalls.Load() != 1 {
		t.Fatalf("inside the margin: changed=%v refreshes=%d err=%v, want one renewal", c2.AccessToken != c0.AccessToken, fx.refreshCalls.Load(), err)
	}
	access, refresh := fx.current()
	stored, _, _ := h.store.Get(auth.XAIGrok)
	if stored.AccessToken != access || stored.RefreshToken != refresh || stored.RefreshToken == c0.RefreshToken {
		t.Error("the renewed (rotated) tokens were not stored")
	}
	if stored.AccountID != fakeXAIEmail {
		t.Errorf("account %q lost in the renewal", stored.AccountID)
	}
	if p := fx.shapeProblems(); len(p) != 0 {
		t.Errorf("the token endpoint saw %q", p)
	}
	assertNoSecrets(t, h, h.log.String(), c0.AccessToken, c0.RefreshToken, c2.AccessToken, c2.RefreshToken)
}

func TestXAIRefreshFailures(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		fx := newFakeXAIAuth(t)
		h := newXAIHarness(t, fx)
		c := xaiLogin(t, h, fx)
		h.clock.Advance(2 * time.Hour)
		fx.mu.Lock()
		fx.refreshOK = false
		fx.mu.Unlock()
		_, err := h.m.Token(t.Context(), auth.XAIGrok)
		var se *providers.SignInError
		if !errors.As(err, &se) || se.Provider != auth.XAIGrok || providers.IsTransient(err) {
			t.Fatalf("err = %v (%T), want a permanent *providers.SignInError for xai-grok", err, err)
		}
		if !strings.Contains(err.Error(), "run `nanobot provider login xai-grok`") {
			t.Errorf("message %q does not name the command", err)
		}
		// The fake quotes the refresh token in its error description.
		if strings.Contains(err.Error(), c.RefreshToken) || strings.Contains(err.Error(), c.AccessToken) {
			t.Error("the error carries a token")
		}
	})
	t.Run("server down", func(t *testing.T) {
		fx := newFakeXAIAuth(t)
		h := newXAIHarness(t, fx)
		xaiLogin(t, h, fx)
		h.clock.Advance(2 * time.Hour)
		fx.mu.Lock()
		fx.down = true
		fx.mu.Unlock()
		_, err := h.m.Token(t.Context(), auth.XAIGrok)
		var se *providers.SignInError
		if errors.As(err, &se) || !providers.IsTransient(err) {
			t.Fatalf("err = %v, want a transient provider error (not signed out)", err)
		}
	})
	t.Run("no refresh token", func(t *testing.T) {
		h := newHarnessWith(t, nil)
		if err := h.store.Put(auth.XAIGrok, auth.Credential{AccessToken: "xai_only_access_0123", ExpiresAt: h.clock.Now().Add(-time.Minute)}); err != nil {
			t.Fatal(err)
		}
		_, err := h.m.Token(t.Context(), auth.XAIGrok)
		var se *providers.SignInError
		if !errors.As(err, &se) {
			t.Fatalf("err = %v, want a SignInError", err)
		}
	})
}

// fakeGrokProxy is cli-chat-proxy.grok.com as far as the sign-in is
// concerned: it wants the current access token and the Grok client
// headers, refuses the first token it is told to (a token xAI expired
// early), and quotes the request's Authorization header in its errors.
type fakeGrokProxy struct {
	srv *httptest.Server
	fx  *fakeXAIAuth

	mu      sync.Mutex
	refuse  string // an access token answered 401
	forbid  bool   // answer 403, quoting the bearer
	bad     []string
	seen    map[string]bool // access tokens seen
	convIDs map[string]bool
	calls   atomic.Int32
}

func newFakeGrokProxy(t *testing.T, fx *fakeXAIAuth) *fakeGrokProxy {
	f := &fakeGrokProxy{fx: fx, seen: map[string]bool{}, convIDs: map[string]bool{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		access, _ := fx.current()
		f.mu.Lock()
		defer f.mu.Unlock()
		bearer := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		var problems []string
		for k, want := range map[string]string{
			"X-Xai-Token-Auth": "xai-grok-cli", "X-Grok-Client-Version": auth.XAIClientVersion,
			"X-Grok-Client-Identifier": "nanobot", "X-Grok-Client-Mode": "headless",
		} {
			if r.Header.Get(k) != want {
				problems = append(problems, k+"="+r.Header.Get(k))
			}
		}
		switch r.Method {
		case http.MethodPost:
			conv := r.Header.Get("X-Grok-Conv-Id")
			if conv == "" || r.Header.Get("X-Grok-Session-Id") != conv || r.Header.Get("X-Grok-Req-Id") == "" ||
				r.Header.Get("X-Grok-Agent-Id") == "" || r.Header.Get("X-Authenticateresponse") != "authenticate-response" {
				problems = append(problems, "conversation headers")
			}
			f.convIDs[conv] = true
		case http.MethodGet:
			if r.Header.Get("X-Userid") != "user-42" || r.Header.Get("X-Email") != fakeXAIEmail {
				problems = append(problems, "identity headers "+r.Header.Get("X-Userid")+" "+r.Header.Get("X-Email"))
			}
		}
		f.bad = append(f.bad, problems...)
		switch {
		case bearer != access || bearer == f.refuse:
			writeJSON(w, 401, map[string]any{"error": "token expired"})
		case f.forbid:
			writeJSON(w, 403, map[string]any{"error": map[string]any{"message": "no subscription for " + r.Header.Get("Authorization")},
				"echo": map[string]any{"access_token": bearer, "note": "Bearer " + bearer}})
		default:
			f.seen[bearer] = true
			writeJSON(w, 200, map[string]any{"ok": true})
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func grokClient(t *testing.T, h *harness, proxy *fakeGrokProxy) *http.Client {
	t.Helper()
	res := providers.Resolution{Provider: auth.XAIGrok, APIBase: proxy.srv.URL + "/v1"}
	hc, err := h.m.Client(res, nil)
	if err != nil {
		t.Fatal(err)
	}
	return hc
}

// TestXAIConcurrentRefreshOnce: twenty calls that find the token inside
// its margin cause one refresh (held open until all twenty wait on it),
// and every call carries the new token and the Grok client headers.
func TestXAIConcurrentRefreshOnce(t *testing.T) {
	fx := newFakeXAIAuth(t)
	proxy := newFakeGrokProxy(t, fx)
	h := newXAIHarness(t, fx)
	xaiLogin(t, h, fx)
	hc := grokClient(t, h, proxy)
	h.clock.Advance(time.Hour - time.Minute) // expired within the 5-minute margin

	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the fake closes, should the test fail early
	fx.mu.Lock()
	fx.release = release
	fx.mu.Unlock()
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := hc.Post(proxy.srv.URL+"/v1/responses", "application/json", strings.NewReader(`{"model":"grok-4.5"}`))
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
	// The refresh is in flight and held; open the gate once it started.
	waitfor.True(t, "the refresh to start", func() bool { return fx.refreshCalls.Load() > 0 })
	free()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("call: %v", err)
	}
	if got := fx.refreshCalls.Load(); got != 1 {
		t.Errorf("%d refreshes, want 1", got)
	}
	proxy.mu.Lock()
	defer proxy.mu.Unlock()
	if len(proxy.seen) != 1 || len(proxy.bad) != 0 {
		t.Errorf("proxy saw %d distinct tokens (want 1, the refreshed one) and problems %q", len(proxy.seen), proxy.bad)
	}
	if len(proxy.convIDs) != n {
		t.Errorf("%d distinct conversation ids over %d calls, want a fresh one per call", len(proxy.convIDs), n)
	}
}

// TestXAITransportRenewsOn401: a token the proxy refuses before its stored
// expiry is renewed once and the request repeated with the body.
func TestXAITransportRenewsOn401(t *testing.T) {
	fx := newFakeXAIAuth(t)
	proxy := newFakeGrokProxy(t, fx)
	h := newXAIHarness(t, fx)
	c := xaiLogin(t, h, fx)
	proxy.mu.Lock()
	proxy.refuse = c.AccessToken
	proxy.mu.Unlock()
	resp, err := grokClient(t, h, proxy).Post(proxy.srv.URL+"/v1/responses", "application/json", strings.NewReader(`{"model":"grok-4.5"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || fx.refreshCalls.Load() != 1 || proxy.calls.Load() != 2 {
		t.Errorf("status %d after %d refreshes and %d calls, want 200 after 1 and 2", resp.StatusCode, fx.refreshCalls.Load(), proxy.calls.Load())
	}
}

// TestXAIModelCatalogIdentity: the catalog (a GET) is told the account
// from the access token's claims instead of conversation ids.
func TestXAIModelCatalogIdentity(t *testing.T) {
	fx := newFakeXAIAuth(t)
	proxy := newFakeGrokProxy(t, fx)
	h := newXAIHarness(t, fx)
	xaiLogin(t, h, fx)
	resp, err := grokClient(t, h, proxy).Get(proxy.srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	proxy.mu.Lock()
	defer proxy.mu.Unlock()
	if resp.StatusCode != 200 || len(proxy.bad) != 0 {
		t.Errorf("status %d, problems %q", resp.StatusCode, proxy.bad)
	}
}

// TestErrorAnswersAreScrubbed: an error answer that echoes the bearer (in
// a message, in a token-named field, as "Bearer …") reaches the backend
// with the token masked, so no error message or log line can carry it.
func TestErrorAnswersAreScrubbed(t *testing.T) {
	fx := newFakeXAIAuth(t)
	proxy := newFakeGrokProxy(t, fx)
	h := newXAIHarness(t, fx)
	c := xaiLogin(t, h, fx)
	proxy.mu.Lock()
	proxy.forbid = true
	proxy.mu.Unlock()
	resp, err := grokClient(t, h, proxy).Post(proxy.srv.URL+"/v1/responses", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Fatalf("status %d, want the proxy's 403", resp.StatusCode)
	}
	if strings.Contains(string(body), c.AccessToken) || !strings.Contains(string(body), "no subscription for") {
		t.Errorf("error body %s: want the message kept and the token masked", body)
	}
}

// The PKCE challenge in the authorization URL is the S256 digest of the
// verifier the code is redeemed with: the fake's token endpoint checks it,
// so a login that succeeds proves it; this checks the fake does.
func TestFakeXAIChecksVerifier(t *testing.T) {
	fx := newFakeXAIAuth(t)
	sum := sha256.Sum256([]byte("the-right-verifier"))
	code := fx.authorize(base64.RawURLEncoding.EncodeToString(sum[:]), "http://127.0.0.1:1/callback")
	resp, err := http.PostForm(fx.srv.URL+"/oauth2/token", url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"client_id": {auth.DefaultXAIClientID}, "redirect_uri": {"http://127.0.0.1:1/callback"}, "code_verifier": {"a-wrong-verifier"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("a wrong verifier answered %d, want 400", resp.StatusCode)
	}
}
