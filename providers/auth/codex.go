package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/providers"
)

const codexScope = "openid profile email offline_access"

// ErrLoopbackUnavailable: the loopback redirect cannot listen (port taken,
// no network namespace); the device-code flow works instead.
var ErrLoopbackUnavailable = errors.New("the loopback redirect port is not available")

// LoginCodex signs in to ChatGPT with the authorization-code flow and PKCE:
// it listens on the loopback redirect, shows the authorization URL through
// prompt, and waits until the browser comes back (or ctx ends). A callback
// whose state does not match is answered 400 and ignored. When the port
// cannot be opened the error wraps ErrLoopbackUnavailable.
func (m *Manager) LoginCodex(ctx context.Context, prompt func(Prompt)) (Credential, error) {
	ep := m.endpoints(Codex)
	port := ep.RedirectPort
	if port < 0 {
		port = 0
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return Credential{}, fmt.Errorf("%s: listen on 127.0.0.1:%d: %w (%w)", Codex, port, ErrLoopbackUnavailable, err)
	}
	defer ln.Close()
	redirect := fmt.Sprintf("http://localhost:%d/auth/callback", ln.Addr().(*net.TCPAddr).Port)

	verifier, challenge := pkcePair()
	state := randomString(32)
	q := url.Values{
		"response_type":              {"code"},
		"client_id":                  {ep.ClientID},
		"redirect_uri":               {redirect},
		"scope":                      {codexScope},
		"code_challenge":             {challenge},
		"code_challenge_method":      {"S256"},
		"state":                      {state},
		"id_token_add_organizations": {"true"},
		"codex_cli_simplified_flow":  {"true"},
	}
	authURL := ep.AuthBase + "/oauth/authorize?" + q.Encode()

	type result struct {
		cred Credential
		err  error
	}
	done := make(chan result, 1)
	finish := func(r result) {
		select {
		case done <- r:
		default:
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/auth/callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(state)) != 1 {
			// Not the browser we sent: a forged or stale redirect. Keep
			// waiting for the real one.
			m.log.Warn("sign-in callback with a wrong state ignored", "provider", Codex)
			page(w, http.StatusBadRequest, "This sign-in link is not the one nanobot is waiting for. Start again from the terminal.")
			return
		}
		if e := q.Get("error"); e != "" {
			err := fmt.Errorf("%s: %w (%s)", Codex, ErrAccessDenied, e)
			if e != "access_denied" {
				err = fmt.Errorf("%s: authorization failed: %s", Codex, e)
			}
			page(w, http.StatusForbidden, "Sign-in was not completed. You can close this tab.")
			finish(result{err: err})
			return
		}
		code := q.Get("code")
		if code == "" {
			page(w, http.StatusBadRequest, "The redirect carried no authorization code.")
			finish(result{err: fmt.Errorf("%s: the redirect carried no authorization code", Codex)})
			return
		}
		c, err := m.codexExchange(r.Context(), code, verifier, redirect)
		if err != nil {
			page(w, http.StatusBadGateway, "Sign-in failed; see the terminal.")
			finish(result{err: err})
			return
		}
		page(w, http.StatusOK, "Signed in to nanobot. You can close this tab.")
		finish(result{cred: c})
	})
	// The browser keeps its connection alive after the redirect; IdleTimeout
	// lets it go instead of holding it until Shutdown.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 30 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()

	prompt(Prompt{URL: authURL})
	select {
	case r := <-done:
		if r.err != nil {
			return Credential{}, r.err
		}
		if err := m.save(Codex, r.cred); err != nil {
			return Credential{}, err
		}
		return r.cred, nil
	case <-ctx.Done():
		return Credential{}, fmt.Errorf("%s: waiting for the browser: %w", Codex, ctx.Err())
	}
}

func page(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><title>nanobot</title><p>%s</p>\n", html.EscapeString(msg))
}

// codexDeviceCode is the answer of /api/accounts/deviceauth/usercode.
type codexDeviceCode struct {
	DeviceAuthID string      `json:"device_auth_id"`
	UserCode     string      `json:"user_code"`
	Interval     json.Number `json:"interval"`
}

// codexDeviceToken is the answer of /api/accounts/deviceauth/token once
// the user approved: an authorization code and its PKCE verifier.
type codexDeviceToken struct {
	AuthorizationCode string `json:"authorization_code"`
	CodeVerifier      string `json:"code_verifier"`
}

// codexDeviceTTL is how long OpenAI's device codes live.
const codexDeviceTTL = 15 * time.Minute

// LoginCodexDevice signs in to ChatGPT with OpenAI's device-code flow, for
// machines without a browser: prompt shows a URL to open anywhere and the
// code to enter there.
func (m *Manager) LoginCodexDevice(ctx context.Context, prompt func(Prompt)) (Credential, error) {
	ep := m.endpoints(Codex)
	r, err := m.postJSON(ctx, Codex, ep.AuthBase+"/api/accounts/deviceauth/usercode", map[string]string{"client_id": ep.ClientID})
	if err != nil {
		return Credential{}, err
	}
	if r.status == http.StatusNotFound {
		return Credential{}, fmt.Errorf("%s: device-code sign-in is not enabled for this account; sign in on a machine with a browser", Codex)
	}
	if r.status != http.StatusOK {
		return Credential{}, fmt.Errorf("%s: request a device code: %w", Codex, r.asError(Codex))
	}
	var dc codexDeviceCode
	if err := decodeJSON(Codex, "device code", r.body, &dc); err != nil {
		return Credential{}, err
	}
	if dc.DeviceAuthID == "" || dc.UserCode == "" {
		return Credential{}, fmt.Errorf("%s: device code answer lacks device_auth_id or user_code", Codex)
	}
	interval := 5 * time.Second
	if n, err := strconv.ParseInt(dc.Interval.String(), 10, 64); err == nil && n > 0 {
		interval = time.Duration(n) * time.Second
	}
	deadline := m.opts.Now().Add(codexDeviceTTL)
	prompt(Prompt{URL: ep.AuthBase + "/codex/device", UserCode: dc.UserCode, ExpiresAt: deadline})
	for {
		if !m.opts.Now().Before(deadline) {
			return Credential{}, fmt.Errorf("%s: %w", Codex, ErrCodeExpired)
		}
		if err := m.opts.Wait(ctx, interval); err != nil {
			return Credential{}, providers.Canceled(Codex, err)
		}
		r, err := m.postJSON(ctx, Codex, ep.AuthBase+"/api/accounts/deviceauth/token", map[string]string{"device_auth_id": dc.DeviceAuthID, "user_code": dc.UserCode})
		if err != nil {
			if providers.IsTransient(err) {
				continue
			}
			return Credential{}, err
		}
		switch {
		case r.status == http.StatusForbidden || r.status == http.StatusNotFound:
			continue // not approved yet
		case r.status == http.StatusGone:
			return Credential{}, fmt.Errorf("%s: %w", Codex, ErrCodeExpired)
		case r.status != http.StatusOK:
			if oe := r.oauthError(); oe.Code == "access_denied" {
				return Credential{}, fmt.Errorf("%s: %w", Codex, ErrAccessDenied)
			}
			return Credential{}, fmt.Errorf("%s: device flow: %w", Codex, r.asError(Codex))
		}
		var tok codexDeviceToken
		if err := decodeJSON(Codex, "device flow", r.body, &tok); err != nil {
			return Credential{}, err
		}
		if tok.AuthorizationCode == "" || tok.CodeVerifier == "" {
			return Credential{}, fmt.Errorf("%s: device flow answer lacks authorization_code or code_verifier", Codex)
		}
		c, err := m.codexExchange(ctx, tok.AuthorizationCode, tok.CodeVerifier, ep.AuthBase+"/deviceauth/callback")
		if err != nil {
			return Credential{}, err
		}
		if err := m.save(Codex, c); err != nil {
			return Credential{}, err
		}
		return c, nil
	}
}

// codexExchange trades an authorization code for tokens.
func (m *Manager) codexExchange(ctx context.Context, code, verifier, redirect string) (Credential, error) {
	ep := m.endpoints(Codex)
	tr, err := m.redeemCode(ctx, Codex, ep.AuthBase+"/oauth/token", ep.ClientID, code, verifier, redirect)
	if err != nil {
		return Credential{}, err
	}
	if tr.RefreshToken == "" {
		return Credential{}, fmt.Errorf("%s: token: the token answer has no refresh_token", Codex)
	}
	c := m.codexCredential(Credential{}, tr)
	c.SignedInAt = m.opts.Now()
	return c, nil
}

// codexRefresh renews the access token with the refresh token. A refused
// refresh token (revoked, expired, or already used by another client) is
// a SignInError.
func (m *Manager) codexRefresh(ctx context.Context, cur Credential) (Credential, error) {
	if cur.RefreshToken == "" {
		return Credential{}, &providers.SignInError{Provider: Codex, Reason: "no refresh token is stored"}
	}
	ep := m.endpoints(Codex)
	r, err := m.postJSON(ctx, Codex, ep.AuthBase+"/oauth/token", map[string]string{
		"client_id":     ep.ClientID,
		"grant_type":    "refresh_token",
		"refresh_token": cur.RefreshToken,
		"scope":         "openid profile email",
	})
	if err != nil {
		return Credential{}, err
	}
	tr, err := refreshAnswer(Codex, cur.RefreshToken, r)
	if err != nil {
		return Credential{}, err
	}
	return m.codexCredential(cur, tr), nil
}

// codexCredential merges a token answer into cur: a field the answer
// lacks (a refresh that keeps the refresh token) keeps its old value.
func (m *Manager) codexCredential(cur Credential, tr tokenResponse) Credential {
	m.opts.Redact.Add(tr.AccessToken, tr.RefreshToken, tr.IDToken)
	cur.AccessToken = tr.AccessToken
	if tr.RefreshToken != "" {
		cur.RefreshToken = tr.RefreshToken
	}
	if tr.IDToken != "" {
		cur.IDToken = tr.IDToken
		if id := chatGPTAccountID(tr.IDToken); id != "" {
			cur.AccountID = id
		}
	}
	cur.ExpiresAt = time.Time{}
	switch {
	case tr.ExpiresIn > 0:
		cur.ExpiresAt = m.opts.Now().Add(time.Duration(tr.ExpiresIn) * time.Second).UTC()
	default:
		var claims struct {
			Exp int64 `json:"exp"`
		}
		if jwtClaims(tr.AccessToken, &claims) == nil && claims.Exp > 0 {
			cur.ExpiresAt = time.Unix(claims.Exp, 0).UTC()
		}
	}
	return cur
}

// chatGPTAccountID reads the ChatGPT account id from an id_token. The
// token came straight from the token endpoint over TLS, so its signature
// is not checked: it only selects the account, the server enforces access.
func chatGPTAccountID(idToken string) string {
	var claims struct {
		Auth struct {
			AccountID string `json:"chatgpt_account_id"`
		} `json:"https://api.openai.com/auth"`
	}
	if jwtClaims(idToken, &claims) != nil {
		return ""
	}
	return claims.Auth.AccountID
}

// jwtClaims decodes the payload of a JWT without verifying it.
func jwtClaims(token string, v any) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return errors.New("not a JWT")
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// pkcePair returns an RFC 7636 code verifier and its S256 challenge.
func pkcePair() (verifier, challenge string) {
	verifier = randomString(64)
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}
