package auth

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/nanobot-go/nanobot/providers"
)

// The xAI sign-in is the public client contract of xAI's Grok CLI, which
// the Python nanobot follows too: these values are that contract's.
const (
	// XAIClientVersion is the Grok client version told to the sign-in and
	// to the subscription proxy (x-grok-client-version); the proxy answers
	// 426 to a client it considers too old.
	XAIClientVersion = "0.2.109"
	// xaiCallbackOrigin is the page that may call the loopback callback
	// from script (CORS); the redirect itself needs no CORS.
	xaiCallbackOrigin = "https://accounts.x.ai"
	// xaiDefaultTTL is assumed when a token answer has no expires_in.
	xaiDefaultTTL = time.Hour
	// xaiClientIdentifier names this client to xAI (referrer and
	// x-grok-client-identifier), as the Python nanobot does.
	xaiClientIdentifier = "nanobot"
)

// xaiScopes are the scopes of the Grok CLI client; offline_access brings
// the refresh token.
var xaiScopes = []string{
	"openid", "profile", "email", "offline_access",
	"grok-cli:access", "api:access",
	"conversations:read", "conversations:write",
	"workspaces:read", "workspaces:write",
}

// ErrPasteUnusable: what the user pasted holds no authorization code, or
// comes from another sign-in attempt.
var ErrPasteUnusable = errors.New("the pasted text is not the callback address (or code) of this sign-in")

// xaiDiscovery is the part of the issuer's OpenID Connect discovery
// document the sign-in uses.
type xaiDiscovery struct {
	Issuer                string `json:"issuer"`
	AuthorizationEndpoint string `json:"authorization_endpoint"`
	TokenEndpoint         string `json:"token_endpoint"`
	UserinfoEndpoint      string `json:"userinfo_endpoint"`
}

// LoginXAI signs in to xAI with a Grok (X Premium / SuperGrok)
// subscription: it reads the issuer's OpenID Connect discovery document,
// listens on a loopback redirect (127.0.0.1, a free port unless
// Endpoints.RedirectPort pins one, path /callback), shows the
// authorization URL through prompt, and redeems the authorization code
// with its PKCE verifier when the browser comes back. A callback whose
// state is not this attempt's is answered 400 and ignored.
//
// pasted, when not nil, is a second way back for a browser on another
// machine: the first line received there — the address the browser ended
// on, or the bare code — is used if the loopback has not been reached by
// then. A paste from another attempt fails with ErrPasteUnusable; a closed
// channel leaves the loopback alone. The first of the two wins.
func (m *Manager) LoginXAI(ctx context.Context, prompt func(Prompt), pasted <-chan string) (Credential, error) {
	ep := m.endpoints(XAIGrok)
	disc, err := m.xaiDiscover(ctx)
	if err != nil {
		return Credential{}, err
	}
	port := max(ep.RedirectPort, 0)
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return Credential{}, fmt.Errorf("%s: listen on 127.0.0.1:%d: %w (%w)", XAIGrok, port, ErrLoopbackUnavailable, err)
	}
	defer ln.Close()
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port)

	verifier, challenge := pkcePair()
	state := randomString(32)
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {ep.ClientID},
		"redirect_uri":          {redirect},
		"scope":                 {strings.Join(xaiScopes, " ")},
		"code_challenge":        {challenge},
		"code_challenge_method": {"S256"},
		"state":                 {state},
		"nonce":                 {randomString(32)},
		"referrer":              {xaiClientIdentifier},
	}
	sep := "?"
	if strings.Contains(disc.AuthorizationEndpoint, "?") {
		sep = "&"
	}
	authURL := disc.AuthorizationEndpoint + sep + q.Encode()

	type result struct {
		cred Credential
		err  error
	}
	done := make(chan result, 1)
	// claimed: a code has been taken (from the loopback or a paste); the
	// other way back is no longer listened to, so a code is redeemed once.
	var claimed atomic.Bool
	redeem := func(code string) result {
		c, err := m.xaiExchange(ctx, disc, code, verifier, redirect)
		return result{cred: c, err: err}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/callback", func(w http.ResponseWriter, r *http.Request) {
		xaiCORS(w, r)
		if r.Method == http.MethodOptions {
			w.Header().Set("Access-Control-Allow-Methods", "GET, OPTIONS")
			w.Header().Set("Access-Control-Allow-Headers", "Content-Type")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if r.Method != http.MethodGet {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		q := r.URL.Query()
		if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(state)) != 1 {
			m.log.Warn("sign-in callback with a wrong state ignored", "provider", XAIGrok)
			page(w, http.StatusBadRequest, "This sign-in link is not the one nanobot is waiting for. Start again from the terminal.")
			return
		}
		if !claimed.CompareAndSwap(false, true) {
			page(w, http.StatusConflict, "This sign-in is already being completed; return to the terminal.")
			return
		}
		if e := q.Get("error"); e != "" {
			err := fmt.Errorf("%s: %w (%s)", XAIGrok, ErrAccessDenied, e)
			if e != "access_denied" {
				err = fmt.Errorf("%s: authorization failed: %s", XAIGrok, e)
			}
			page(w, http.StatusForbidden, "Sign-in was not completed. You can close this tab.")
			done <- result{err: err}
			return
		}
		code := q.Get("code")
		if code == "" {
			page(w, http.StatusBadRequest, "The redirect carried no authorization code.")
			done <- result{err: fmt.Errorf("%s: the redirect carried no authorization code", XAIGrok)}
			return
		}
		res := redeem(code)
		if res.err != nil {
			page(w, http.StatusBadGateway, "Sign-in failed; see the terminal.")
		} else {
			page(w, http.StatusOK, "Signed in to xAI. You can close this tab and return to nanobot.")
		}
		done <- res
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
	for {
		var r result
		select {
		case r = <-done:
		case text, ok := <-pasted:
			if !ok {
				pasted = nil // no paste will come; keep waiting for the loopback
				continue
			}
			code, err := pastedCode(text, state)
			if err != nil {
				return Credential{}, fmt.Errorf("%s: %w", XAIGrok, err)
			}
			if !claimed.CompareAndSwap(false, true) {
				continue // the loopback was first; its result follows on done
			}
			r = redeem(code)
		case <-ctx.Done():
			return Credential{}, fmt.Errorf("%s: waiting for the browser: %w", XAIGrok, ctx.Err())
		}
		if r.err != nil {
			return Credential{}, r.err
		}
		if err := m.save(XAIGrok, r.cred); err != nil {
			return Credential{}, err
		}
		return r.cred, nil
	}
}

// xaiCORS lets xAI's accounts page call the callback from script, and
// answers Chrome's private-network preflight.
func xaiCORS(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Origin") == xaiCallbackOrigin {
		w.Header().Set("Access-Control-Allow-Origin", xaiCallbackOrigin)
		w.Header().Add("Vary", "Origin")
	}
	w.Header().Set("Access-Control-Allow-Private-Network", "true")
}

// pastedCode reads the authorization code from what the user pasted: the
// callback address (or its query), whose state, when it carries one, must
// be this attempt's; or the bare code. The PKCE verifier binds a code to
// this attempt either way.
func pastedCode(text, state string) (string, error) {
	text = strings.TrimSpace(text)
	text, _, _ = strings.Cut(text, "#")
	query, found := "", false
	if _, q, ok := strings.Cut(text, "?"); ok {
		query, found = q, true
	} else if strings.Contains(text, "code=") || strings.Contains(text, "error=") {
		query, found = text, true
	}
	if !found {
		if text == "" || strings.ContainsAny(text, " /&") {
			return "", ErrPasteUnusable
		}
		return text, nil // the bare code
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", ErrPasteUnusable
	}
	if s := q.Get("state"); s != "" && subtle.ConstantTimeCompare([]byte(s), []byte(state)) != 1 {
		return "", ErrPasteUnusable
	}
	if e := q.Get("error"); e != "" {
		return "", fmt.Errorf("%w (%s)", ErrAccessDenied, e)
	}
	if q.Get("code") == "" {
		return "", ErrPasteUnusable
	}
	return q.Get("code"), nil
}

// xaiDiscover fetches the issuer's discovery document. The issuer must be
// https (or http on loopback, for fakes), the document must name the same
// issuer, and every endpoint it lists must be on the issuer's own origin:
// a document that sends codes or tokens elsewhere is refused.
func (m *Manager) xaiDiscover(ctx context.Context) (xaiDiscovery, error) {
	issuer := m.endpoints(XAIGrok).AuthBase
	iu, err := url.Parse(issuer)
	if err != nil || iu.Host == "" || iu.User != nil || !(iu.Scheme == "https" || iu.Scheme == "http" && isLoopback(iu.Hostname())) {
		return xaiDiscovery{}, fmt.Errorf("%s: the issuer %q is not an https URL", XAIGrok, issuer)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, issuer+"/.well-known/openid-configuration", nil)
	if err != nil {
		return xaiDiscovery{}, fmt.Errorf("%s: %w", XAIGrok, err)
	}
	req.Header.Set("Accept", "application/json")
	r, err := m.send(XAIGrok, req)
	if err != nil {
		return xaiDiscovery{}, err
	}
	if r.status != http.StatusOK {
		return xaiDiscovery{}, fmt.Errorf("%s: OpenID discovery: %w", XAIGrok, r.asError(XAIGrok))
	}
	var d xaiDiscovery
	if err := decodeJSON(XAIGrok, "OpenID discovery", r.body, &d); err != nil {
		return xaiDiscovery{}, err
	}
	if strings.TrimRight(d.Issuer, "/") != issuer {
		return xaiDiscovery{}, fmt.Errorf("%s: OpenID discovery names the issuer %q, not %q", XAIGrok, d.Issuer, issuer)
	}
	for _, e := range []struct {
		what, url string
		optional  bool
	}{
		{"authorization", d.AuthorizationEndpoint, false},
		{"token", d.TokenEndpoint, false},
		{"userinfo", d.UserinfoEndpoint, true},
	} {
		if e.url == "" && e.optional {
			continue
		}
		u, err := url.Parse(e.url)
		if e.url == "" || err != nil || !sameOrigin(iu, u) {
			return xaiDiscovery{}, fmt.Errorf("%s: OpenID discovery: the %s endpoint %q is not on the issuer's origin", XAIGrok, e.what, e.url)
		}
	}
	return d, nil
}

// sameOrigin reports whether u is on origin's scheme, host and port, with
// no credentials in it.
func sameOrigin(origin, u *url.URL) bool {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		return map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	return u.User == nil && u.Scheme == origin.Scheme &&
		strings.EqualFold(u.Hostname(), origin.Hostname()) && port(u) == port(origin)
}

// xaiExchange redeems an authorization code and reads the account name.
func (m *Manager) xaiExchange(ctx context.Context, disc xaiDiscovery, code, verifier, redirect string) (Credential, error) {
	ep := m.endpoints(XAIGrok)
	tr, err := m.redeemCode(ctx, XAIGrok, disc.TokenEndpoint, ep.ClientID, code, verifier, redirect, xaiClientHeader...)
	if err != nil {
		return Credential{}, err
	}
	c := m.xaiCredential(Credential{}, tr)
	c.AccountID = m.xaiAccount(ctx, disc.UserinfoEndpoint, tr.AccessToken)
	c.SignedInAt = m.opts.Now()
	return c, nil
}

// xaiRefresh renews the access token at the issuer's token endpoint (the
// Python nanobot's address for it: {issuer}/oauth2/token). A refused
// refresh token (revoked, expired, or already used) is a SignInError.
func (m *Manager) xaiRefresh(ctx context.Context, cur Credential) (Credential, error) {
	if cur.RefreshToken == "" {
		return Credential{}, &providers.SignInError{Provider: XAIGrok, Reason: "the access token expired and no refresh token is stored"}
	}
	ep := m.endpoints(XAIGrok)
	r, err := m.postForm(ctx, XAIGrok, ep.AuthBase+"/oauth2/token", url.Values{
		"grant_type":    {"refresh_token"},
		"refresh_token": {cur.RefreshToken},
		"client_id":     {ep.ClientID},
	}, xaiClientHeader...)
	if err != nil {
		return Credential{}, err
	}
	tr, err := refreshAnswer(XAIGrok, cur.RefreshToken, r)
	if err != nil {
		return Credential{}, err
	}
	return m.xaiCredential(cur, tr), nil
}

// xaiClientHeader is the client-version header xAI's token endpoint
// expects on every call.
var xaiClientHeader = []string{"X-Grok-Client-Version", XAIClientVersion}

// xaiCredential merges a token answer into cur: a refresh that sends no
// new refresh token keeps the old one.
func (m *Manager) xaiCredential(cur Credential, tr tokenResponse) Credential {
	m.opts.Redact.Add(tr.AccessToken, tr.RefreshToken, tr.IDToken)
	cur.AccessToken = tr.AccessToken
	if tr.RefreshToken != "" {
		cur.RefreshToken = tr.RefreshToken
	}
	if tr.IDToken != "" {
		cur.IDToken = tr.IDToken
	}
	ttl := xaiDefaultTTL
	if tr.ExpiresIn > 0 {
		ttl = time.Duration(tr.ExpiresIn) * time.Second
	}
	cur.ExpiresAt = m.opts.Now().Add(ttl).UTC()
	return cur
}

// xaiAccount names the signed-in account from the userinfo endpoint
// (email, else username, name or subject). It is for nanobot status only:
// any failure leaves it empty.
func (m *Manager) xaiAccount(ctx context.Context, endpoint, access string) string {
	if endpoint == "" {
		return ""
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return ""
	}
	req.Header.Set("Authorization", "Bearer "+access)
	req.Header.Set("Accept", "application/json")
	r, err := m.send(XAIGrok, req)
	if err != nil || r.status != http.StatusOK {
		m.log.Debug("userinfo unavailable; the account name is left out", "provider", XAIGrok, "status", r.status)
		return ""
	}
	var info map[string]any
	if json.Unmarshal(r.body, &info) != nil {
		return ""
	}
	for _, k := range []string{"email", "preferred_username", "name", "sub"} {
		if s, ok := info[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// xaiHeaders adds what xAI's subscription proxy asks of a Grok client,
// besides the bearer: the token kind, the client's version, name and mode,
// and per request fresh conversation, session, request and agent ids (the
// Python nanobot sends new ones each call). The model catalog (the only
// GET) is told the account instead, from the access token's claims.
func xaiHeaders(r *http.Request, c Credential) {
	h := r.Header
	h.Set("X-Xai-Token-Auth", "xai-grok-cli")
	h.Set("X-Grok-Client-Version", XAIClientVersion)
	h.Set("X-Grok-Client-Identifier", xaiClientIdentifier)
	h.Set("X-Grok-Client-Mode", "headless")
	if r.Method == http.MethodGet {
		user, email := xaiIdentity(c)
		if user != "" {
			h.Set("X-Userid", user)
		}
		if email != "" {
			h.Set("X-Email", email)
		}
		return
	}
	conv := uuid.NewString()
	h.Set("X-Authenticateresponse", "authenticate-response")
	h.Set("X-Grok-Conv-Id", conv)
	h.Set("X-Grok-Session-Id", conv)
	h.Set("X-Grok-Req-Id", uuid.NewString())
	h.Set("X-Grok-Agent-Id", uuid.NewString())
}

// xaiIdentity reads the user id and email from the access token's claims
// (a team principal's id for a team token), the email falling back to the
// account name when that is one. The token is not verified here: these
// are hints, and the service authenticates the token itself.
func xaiIdentity(c Credential) (user, email string) {
	var claims struct {
		Sub           string `json:"sub"`
		PrincipalType string `json:"principal_type"`
		PrincipalID   string `json:"principal_id"`
		Email         string `json:"email"`
	}
	_ = jwtClaims(c.AccessToken, &claims)
	user = claims.Sub
	if claims.PrincipalType == "Team" && claims.PrincipalID != "" {
		user = claims.PrincipalID
	}
	email = claims.Email
	if !strings.Contains(email, "@") {
		email = ""
		if strings.Contains(c.AccountID, "@") {
			email = c.AccountID
		}
	}
	return user, email
}
