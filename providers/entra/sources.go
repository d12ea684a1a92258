package entra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Env is where the sources read their settings (os.Getenv in the
// program; a map in tests).
type Env func(string) string

// DefaultAuthority is Entra ID's public cloud sign-in host
// (AZURE_AUTHORITY_HOST overrides it, for sovereign clouds).
const DefaultAuthority = "https://login.microsoftonline.com"

// defaultIMDS is the instance metadata service's token endpoint.
const defaultIMDS = "http://169.254.169.254/metadata/identity/oauth2/token"

// FromEnv picks the source the environment offers, in the order of
// Azure's SDKs: a client secret (AZURE_TENANT_ID, AZURE_CLIENT_ID,
// AZURE_CLIENT_SECRET), a workload identity (AZURE_FEDERATED_TOKEN_FILE
// with the tenant and client), App Service's managed identity
// (IDENTITY_ENDPOINT, IDENTITY_HEADER), the instance metadata service
// (NANOBOT_AZURE_MANAGED_IDENTITY=1, or on a VM: AZURE_CLIENT_ID alone
// picks a user-assigned identity), then the Azure CLI when `az` is on
// PATH. hc makes the HTTP requests (nil: a client with a timeout).
func FromEnv(env Env, hc *http.Client) (Source, error) {
	if hc == nil {
		hc = &http.Client{Timeout: fetchTimeout}
	}
	authority := strings.TrimRight(env("AZURE_AUTHORITY_HOST"), "/")
	if authority == "" {
		authority = DefaultAuthority
	}
	tenant, client := env("AZURE_TENANT_ID"), env("AZURE_CLIENT_ID")
	switch {
	case tenant != "" && client != "" && env("AZURE_CLIENT_SECRET") != "":
		return &clientSecret{hc: hc, authority: authority, tenant: tenant, client: client, secret: env("AZURE_CLIENT_SECRET")}, nil
	case tenant != "" && client != "" && env("AZURE_FEDERATED_TOKEN_FILE") != "":
		return &workload{hc: hc, authority: authority, tenant: tenant, client: client, file: env("AZURE_FEDERATED_TOKEN_FILE")}, nil
	case env("IDENTITY_ENDPOINT") != "" && env("IDENTITY_HEADER") != "":
		return &appService{hc: hc, endpoint: env("IDENTITY_ENDPOINT"), header: env("IDENTITY_HEADER"), client: client}, nil
	case env("NANOBOT_AZURE_MANAGED_IDENTITY") == "1" || env("NANOBOT_AZURE_IMDS") != "":
		ep := env("NANOBOT_AZURE_IMDS")
		if ep == "" {
			ep = defaultIMDS
		}
		return &imds{hc: hc, endpoint: ep, client: client}, nil
	}
	if az, err := exec.LookPath("az"); err == nil {
		return &azureCLI{bin: az, tenant: tenant}, nil
	}
	return nil, ErrNoSource
}

// tokenReply is the JSON of Entra ID's token endpoint and of the managed
// identity endpoints (which write expires_in and expires_on as strings).
type tokenReply struct {
	AccessToken string      `json:"access_token"`
	ExpiresIn   json.Number `json:"expires_in"`
	ExpiresOn   json.Number `json:"expires_on"`
	Error       string      `json:"error"`
	Description string      `json:"error_description"`
}

func (r tokenReply) token(now time.Time) Token {
	t := Token{Value: r.AccessToken, Expires: now.Add(time.Hour)}
	if n, err := r.ExpiresOn.Int64(); err == nil && n > 0 {
		t.Expires = time.Unix(n, 0) // absolute: no clock drift in transit
	} else if n, err := r.ExpiresIn.Int64(); err == nil && n > 0 {
		t.Expires = now.Add(time.Duration(n) * time.Second)
	}
	return t
}

// postForm asks a token endpoint (client secret, workload identity).
func postForm(ctx context.Context, hc *http.Client, source, endpoint string, form url.Values) (Token, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return Token{}, fmt.Errorf("entra: %s: %w", source, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return do(hc, source, req)
}

// do sends a token request and reads the reply.
func do(hc *http.Client, source string, req *http.Request) (Token, error) {
	now := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return Token{}, fmt.Errorf("entra: %s: %w", source, err)
	}
	defer resp.Body.Close()
	var r tokenReply
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(body, &r)
	}
	if resp.StatusCode != http.StatusOK {
		// error and error_description name the problem (AADSTS codes)
		// and hold no secret.
		return Token{}, fmt.Errorf("entra: %s: HTTP %d %s %s", source, resp.StatusCode, r.Error, firstLine(r.Description))
	}
	if err != nil {
		return Token{}, fmt.Errorf("entra: %s: unreadable token reply: %w", source, err)
	}
	return r.token(now), nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(line)
}

func tokenURL(authority, tenant string) string {
	return authority + "/" + url.PathEscape(tenant) + "/oauth2/v2.0/token"
}

// clientSecret is a service principal signing in with its secret.
type clientSecret struct {
	hc                                *http.Client
	authority, tenant, client, secret string
}

func (s *clientSecret) Name() string { return "client secret" }

func (s *clientSecret) Fetch(ctx context.Context) (Token, error) {
	return postForm(ctx, s.hc, s.Name(), tokenURL(s.authority, s.tenant), url.Values{
		"grant_type": {"client_credentials"}, "client_id": {s.client}, "client_secret": {s.secret}, "scope": {Scope},
	})
}

// workload is a Kubernetes workload identity: the federated token the
// cluster writes to a file (and renews) is exchanged for an access token.
type workload struct {
	hc                              *http.Client
	authority, tenant, client, file string
}

func (s *workload) Name() string { return "workload identity" }

func (s *workload) Fetch(ctx context.Context) (Token, error) {
	assertion, err := os.ReadFile(s.file)
	if err != nil {
		return Token{}, fmt.Errorf("entra: %s: %w", s.Name(), err)
	}
	return postForm(ctx, s.hc, s.Name(), tokenURL(s.authority, s.tenant), url.Values{
		"grant_type": {"client_credentials"}, "client_id": {s.client}, "scope": {Scope},
		"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
		"client_assertion":      {strings.TrimSpace(string(assertion))},
	})
}

// imds is a managed identity through the instance metadata service (VMs,
// AKS node identities); client picks a user-assigned identity.
type imds struct {
	hc               *http.Client
	endpoint, client string
}

func (s *imds) Name() string { return "managed identity" }

func (s *imds) Fetch(ctx context.Context) (Token, error) {
	q := url.Values{"api-version": {"2018-02-01"}, "resource": {resource}}
	if s.client != "" {
		q.Set("client_id", s.client)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.endpoint+"?"+q.Encode(), nil)
	if err != nil {
		return Token{}, fmt.Errorf("entra: %s: %w", s.Name(), err)
	}
	req.Header.Set("Metadata", "true")
	return do(s.hc, s.Name(), req)
}

// appService is App Service's and Azure Functions' managed identity.
type appService struct {
	hc                       *http.Client
	endpoint, header, client string
}

func (s *appService) Name() string { return "managed identity (App Service)" }

func (s *appService) Fetch(ctx context.Context) (Token, error) {
	q := url.Values{"api-version": {"2019-08-01"}, "resource": {resource}}
	if s.client != "" {
		q.Set("client_id", s.client)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.endpoint+"?"+q.Encode(), nil)
	if err != nil {
		return Token{}, fmt.Errorf("entra: %s: %w", s.Name(), err)
	}
	req.Header.Set("X-IDENTITY-HEADER", s.header)
	return do(s.hc, s.Name(), req)
}

// azureCLI takes the token of the user signed in with `az login`.
type azureCLI struct {
	bin, tenant string
}

func (s *azureCLI) Name() string { return "Azure CLI" }

func (s *azureCLI) Fetch(ctx context.Context) (Token, error) {
	args := []string{"account", "get-access-token", "--scope", Scope, "--output", "json"}
	if s.tenant != "" {
		args = append(args, "--tenant", s.tenant)
	}
	out, err := exec.CommandContext(ctx, s.bin, args...).Output()
	if err != nil {
		msg := err.Error()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			msg = firstLine(string(ee.Stderr))
		}
		return Token{}, fmt.Errorf("entra: %s: %s (run `az login`)", s.Name(), msg)
	}
	var r struct {
		AccessToken string `json:"accessToken"`
		ExpiresOn   int64  `json:"expires_on"`
		ExpiresOnS  string `json:"expiresOn"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return Token{}, fmt.Errorf("entra: %s: unreadable output: %w", s.Name(), err)
	}
	t := Token{Value: r.AccessToken, Expires: time.Now().Add(time.Hour)}
	switch {
	case r.ExpiresOn > 0:
		t.Expires = time.Unix(r.ExpiresOn, 0)
	case r.ExpiresOnS != "":
		if at, err := time.ParseInLocation("2006-01-02 15:04:05.000000", r.ExpiresOnS, time.Local); err == nil {
			t.Expires = at
		}
	}
	return t, nil
}
