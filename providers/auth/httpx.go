package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/nanobot-go/nanobot/providers"
)

// maxBody bounds what is read of an authorization server's answer.
const maxBody = 1 << 20

// reply is an authorization server's answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// oauthError is the error shape of RFC 6749 section 5.2 and RFC 8628.
type oauthError struct {
	Code        string `json:"error"`
	Description string `json:"error_description"`
}

func (r reply) oauthError() oauthError {
	var e oauthError
	_ = json.Unmarshal(r.body, &e)
	return e
}

// asError classifies a failed answer: transient for 408/429/5xx, otherwise
// permanent. secrets are masked in the message.
func (r reply) asError(provider string, secrets ...string) *providers.Error {
	return providers.HTTPError(provider, r.status, r.header, r.body, secrets...)
}

// postForm sends an application/x-www-form-urlencoded POST; extra holds
// headers a provider's server asks for beyond the standard ones.
func (m *Manager) postForm(ctx context.Context, provider, endpoint string, form url.Values, extra ...string) (reply, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return reply{}, fmt.Errorf("%s: %w", provider, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	for i := 0; i+1 < len(extra); i += 2 {
		req.Header.Set(extra[i], extra[i+1])
	}
	return m.send(provider, req)
}

// redeemCode trades an authorization code and its PKCE verifier for a
// token answer (RFC 6749 section 4.1.3, RFC 7636). A refused code is named
// as such; other failures keep the code and verifier out of the message.
func (m *Manager) redeemCode(ctx context.Context, provider, endpoint, clientID, code, verifier, redirect string, extra ...string) (tokenResponse, error) {
	r, err := m.postForm(ctx, provider, endpoint, url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {redirect},
		"client_id":     {clientID},
		"code_verifier": {verifier},
	}, extra...)
	if err != nil {
		return tokenResponse{}, err
	}
	if r.status != http.StatusOK {
		if oe := r.oauthError(); oe.Code == "invalid_grant" {
			return tokenResponse{}, fmt.Errorf("%s: the authorization code was refused (expired or already used); run the login again", provider)
		}
		return tokenResponse{}, fmt.Errorf("%s: exchange the authorization code: %w", provider, r.asError(provider, code, verifier))
	}
	return decodeToken(provider, "token", r.body)
}

// refreshAnswer reads a token endpoint's answer to a refresh grant: a
// refused refresh token (400, 401, 403) is a SignInError, other failures
// keep the token out of the message.
func refreshAnswer(provider, refreshToken string, r reply) (tokenResponse, error) {
	if r.status == http.StatusBadRequest || r.status == http.StatusUnauthorized || r.status == http.StatusForbidden {
		return tokenResponse{}, &providers.SignInError{Provider: provider, Reason: "the refresh token was refused (revoked, expired or already used)"}
	}
	if r.status != http.StatusOK {
		return tokenResponse{}, fmt.Errorf("%s: refresh: %w", provider, r.asError(provider, refreshToken))
	}
	return decodeToken(provider, "refresh", r.body)
}

// postJSON sends a JSON POST.
func (m *Manager) postJSON(ctx context.Context, provider, endpoint string, v any) (reply, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return reply{}, fmt.Errorf("%s: %w", provider, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(b))
	if err != nil {
		return reply{}, fmt.Errorf("%s: %w", provider, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	return m.send(provider, req)
}

func (m *Manager) send(provider string, req *http.Request) (reply, error) {
	resp, err := m.hc.Do(req)
	if err != nil {
		if ctxErr := req.Context().Err(); ctxErr != nil {
			return reply{}, providers.Canceled(provider, ctxErr)
		}
		return reply{}, providers.NetworkError(provider, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return reply{}, providers.NetworkError(provider, err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: body}, nil
}

// tokenResponse is an OAuth token endpoint's success (RFC 6749 5.1).
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	IDToken      string `json:"id_token"`
	ExpiresIn    int64  `json:"expires_in"`
}

// decodeToken decodes a token endpoint's success body, which must carry
// an access token; what names the endpoint in errors.
func decodeToken(provider, what string, body []byte) (tokenResponse, error) {
	var tr tokenResponse
	if err := decodeJSON(provider, what, body, &tr); err != nil {
		return tokenResponse{}, err
	}
	if tr.AccessToken == "" {
		return tokenResponse{}, fmt.Errorf("%s: %s: the token answer has no access_token", provider, what)
	}
	return tr, nil
}

// decodeJSON decodes a success body, naming the endpoint on failure.
func decodeJSON(provider, what string, body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: %s: unexpected answer (not JSON): %w", provider, what, err)
	}
	return nil
}
