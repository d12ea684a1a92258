package auth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/providers"
)

// Client returns base (nil: a client with transport timeouts) wrapped so
// every request of res's backend carries the current credential of the
// sign-in provider res names, renewed when needed. It matches
// providers.Options.SignIn.
func (m *Manager) Client(res providers.Resolution, base *http.Client) (*http.Client, error) {
	name, ok := Canonical(res.Provider)
	if !ok {
		return nil, fmt.Errorf("auth: %q is not a sign-in provider", res.Provider)
	}
	var hc http.Client
	if base != nil {
		hc = *base
	}
	rt := hc.Transport
	if rt == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ResponseHeaderTimeout = 5 * time.Minute
		rt = tr
	}
	hc.Transport = &Transport{m: m, provider: name, base: rt, apiBase: strings.TrimRight(res.APIBase, "/")}
	return &hc, nil
}

// Transport adds a sign-in provider's credential and required headers to
// each request. On a 401 it renews the credential once and repeats the
// request (when the body can be replayed); a second 401 is a
// *providers.SignInError, so the caller sees one clear failure. Error
// answers reach the backend with every token masked (see scrub).
type Transport struct {
	m        *Manager
	provider string
	base     http.RoundTripper
	// apiBase is the backend's configured endpoint; Copilot requests are
	// re-pointed to the endpoint the Copilot token names.
	apiBase string
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	cred, err := t.m.Token(req.Context(), t.provider)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	retry := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	resp, err := t.send(req, cred, req.Body)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || !retry {
		return scrub(resp, cred), err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
	t.m.Invalidate(t.provider, cred.AccessToken)
	if cred, err = t.m.Token(req.Context(), t.provider); err != nil {
		return nil, err
	}
	body := req.Body
	if req.GetBody != nil {
		if body, err = req.GetBody(); err != nil {
			return nil, fmt.Errorf("%s: replay request body: %w", t.provider, err)
		}
	}
	resp, err = t.send(req, cred, body)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return scrub(resp, cred), err
	}
	resp.Body.Close()
	t.m.Invalidate(t.provider, cred.AccessToken)
	return nil, &providers.SignInError{Provider: t.provider, Reason: "the service refused a freshly renewed token"}
}

func (t *Transport) send(req *http.Request, cred Credential, body io.ReadCloser) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Body = body
	r.Header.Set("Authorization", "Bearer "+cred.AccessToken)
	switch t.provider {
	case Copilot:
		for k, v := range copilotHeaders {
			if r.Header.Get(k) == "" || k == "User-Agent" {
				r.Header.Set(k, v)
			}
		}
		if err := t.repoint(r, cred.Endpoint); err != nil {
			closeBody(r)
			return nil, err
		}
	case Codex:
		if cred.AccountID != "" {
			r.Header.Set("Chatgpt-Account-Id", cred.AccountID)
		}
		r.Header.Set("OpenAI-Beta", "responses=experimental")
		r.Header.Set("Originator", "codex_cli_rs")
	case XAIGrok:
		xaiHeaders(r, cred)
	}
	return t.base.RoundTrip(r)
}

// repoint sends a request meant for the configured apiBase to the
// endpoint the Copilot token names (business and enterprise accounts get
// their own). The endpoint must be https, or http on loopback.
func (t *Transport) repoint(r *http.Request, endpoint string) error {
	endpoint = strings.TrimRight(endpoint, "/")
	if endpoint == "" || endpoint == t.apiBase || t.apiBase == "" {
		return nil
	}
	if !strings.HasPrefix(r.URL.String(), t.apiBase) {
		return nil
	}
	to, err := url.Parse(endpoint)
	if err != nil || to.Host == "" || !(to.Scheme == "https" || to.Scheme == "http" && isLoopback(to.Hostname())) {
		return fmt.Errorf("%s: the Copilot token names an unusable endpoint %q", t.provider, endpoint)
	}
	u, err := url.Parse(endpoint + strings.TrimPrefix(r.URL.String(), t.apiBase))
	if err != nil {
		return fmt.Errorf("%s: repoint request: %w", t.provider, err)
	}
	r.URL = u
	r.Host = u.Host
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// scrub gives an error answer a body from which the credential's tokens,
// bearer values and token-named JSON fields are removed, so a service that
// echoes the request back cannot put a token into an error message or a
// log line. Success bodies (streams) pass untouched.
func scrub(resp *http.Response, cred Credential) *http.Response {
	if resp == nil || resp.StatusCode < http.StatusBadRequest {
		return resp
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
	body = redactBody(body, cred.secrets()...)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	return resp
}

// tokenFields are JSON field names (folded: lower case, no separators)
// whose values are credentials.
var tokenFields = map[string]bool{"accesstoken": true, "refreshtoken": true, "idtoken": true, "authorization": true, "apikey": true}

var fieldFolder = strings.NewReplacer("_", "", "-", "")

var bearerValue = regexp.MustCompile(`(?i)(bearer\s+)[a-z0-9._~+/=-]+`)

// redactBody masks secrets, bearer values and token-named JSON fields.
func redactBody(body []byte, secrets ...string) []byte {
	var v any
	if json.Unmarshal(body, &v) == nil {
		if b, err := json.Marshal(redactFields(v)); err == nil {
			body = b
		}
	}
	s := providers.Redact(string(body), secrets...)
	return []byte(bearerValue.ReplaceAllString(s, "${1}[redacted]"))
}

func redactFields(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if tokenFields[fieldFolder.Replace(strings.ToLower(k))] {
				x[k] = "[redacted]"
			} else {
				x[k] = redactFields(val)
			}
		}
	case []any:
		for i := range x {
			x[i] = redactFields(x[i])
		}
	}
	return v
}

func closeBody(r *http.Request) {
	if r.Body != nil {
		r.Body.Close()
	}
}
