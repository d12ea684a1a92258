// Package entra gets Microsoft Entra ID access tokens for Azure OpenAI,
// for deployments that sign in instead of using an API key: a service
// principal's secret, a Kubernetes workload identity's federated token, a
// managed identity (the instance metadata service, or App Service's
// identity endpoint), or the Azure CLI's signed-in user. Sources tries
// them in that order, by what the environment provides, as Azure's own
// SDKs do.
//
// A Credential keeps the last token and fetches a new one shortly before
// it expires; concurrent callers share one fetch. Its methods are safe for
// concurrent use. Tokens are never logged: errors name the source and the
// HTTP status, not what was sent or received.
package entra

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Scope is the OAuth scope of Azure OpenAI (Cognitive Services).
const Scope = "https://cognitiveservices.azure.com/.default"

// resource is Scope without "/.default", for the endpoints that ask for a
// resource instead.
const resource = "https://cognitiveservices.azure.com"

// Token is an access token and when it expires.
type Token struct {
	Value   string
	Expires time.Time
}

// Source fetches a new token.
type Source interface {
	// Name says which source it is, for errors and `nanobot status`.
	Name() string
	Fetch(ctx context.Context) (Token, error)
}

// ErrNoSource is returned when the environment offers no way to sign in.
var ErrNoSource = errors.New("entra: no Entra ID credential found: set AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET, run on Azure with a managed identity, or sign in with `az login` (or set providers.azure_openai.apiKey)")

// Credential caches the tokens of one source.
type Credential struct {
	src Source
	now func() time.Time

	mu    sync.Mutex
	tok   Token
	fetch *fetch // the fetch in flight, if any
}

// fetch is one token request that callers wait for together.
type fetch struct {
	done chan struct{}
	tok  Token
	err  error
}

// NewCredential returns a Credential over src.
func NewCredential(src Source) *Credential {
	return &Credential{src: src, now: time.Now}
}

// Source is the credential's source.
func (c *Credential) Source() Source { return c.src }

// refreshBefore is how long before expiry a token is replaced: long
// enough that a request never leaves with a token about to lapse.
const refreshBefore = 5 * time.Minute

// Token returns a valid token: the cached one, or a new one when it is
// within refreshBefore of expiry (or half its lifetime, for short ones).
// One fetch runs at a time; the others wait for it or for ctx.
func (c *Credential) Token(ctx context.Context) (string, error) {
	c.mu.Lock()
	if c.tok.Value != "" && c.now().Before(c.tok.Expires.Add(-refreshBefore)) {
		v := c.tok.Value
		c.mu.Unlock()
		return v, nil
	}
	f := c.fetch
	if f == nil {
		f = &fetch{done: make(chan struct{})}
		c.fetch = f
		go c.run(f)
	}
	c.mu.Unlock()
	select {
	case <-f.done:
		if f.err != nil {
			return "", f.err
		}
		return f.tok.Value, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// run fetches a token for f. It is not bound to one caller's context: a
// caller giving up does not fail the others; the fetch has its own bound.
func (c *Credential) run(f *fetch) {
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	tok, err := c.src.Fetch(ctx)
	if err == nil && tok.Value == "" {
		err = fmt.Errorf("entra: %s returned no token", c.src.Name())
	}
	if err == nil {
		// A lifetime shorter than twice refreshBefore (tests, some
		// identities) is used for its first half.
		if life := tok.Expires.Sub(c.now()); life < 2*refreshBefore {
			tok.Expires = c.now().Add(life/2 + refreshBefore)
		}
	}
	c.mu.Lock()
	if err == nil {
		c.tok = tok
	}
	c.fetch = nil
	c.mu.Unlock()
	f.tok, f.err = tok, err
	close(f.done)
}

// fetchTimeout bounds one token request.
const fetchTimeout = 30 * time.Second

// Invalidate drops the cached token (the service refused it).
func (c *Credential) Invalidate() {
	c.mu.Lock()
	c.tok = Token{}
	c.mu.Unlock()
}

// Transport adds "Authorization: Bearer <token>" to each request; on a
// 401 it drops the token so the next request fetches a new one.
type Transport struct {
	Cred *Credential
	// Base is the transport underneath (nil: http.DefaultTransport).
	Base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := t.Cred.Token(req.Context())
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		t.Cred.Invalidate()
	}
	return resp, err
}
