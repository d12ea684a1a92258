package auth

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/nanobot-go/nanobot/providers"
)

// Headers the Copilot API requires of a client; it identifies itself as
// an editor integration.
var copilotHeaders = map[string]string{
	"Editor-Version":         "vscode/1.99.0",
	"Editor-Plugin-Version":  "copilot-chat/0.26.0",
	"Copilot-Integration-Id": "vscode-chat",
	"User-Agent":             "GitHubCopilotChat/0.26.0",
	"Openai-Intent":          "conversation-panel",
}

// CopilotHeaders returns the headers sent with every Copilot call (the
// Authorization header aside).
func CopilotHeaders() map[string]string {
	out := make(map[string]string, len(copilotHeaders))
	for k, v := range copilotHeaders {
		out[k] = v
	}
	return out
}

// LoginCopilot signs in to GitHub with the device flow (prompt shows the
// code and the URL), exchanges the GitHub token for a Copilot token to
// prove the account has Copilot, and stores both.
func (m *Manager) LoginCopilot(ctx context.Context, prompt func(Prompt)) (Credential, error) {
	ep := m.endpoints(Copilot)
	tr, err := m.deviceFlow(ctx, Copilot, ep.AuthBase+"/login/device/code", ep.AuthBase+"/login/oauth/access_token", ep.ClientID, "read:user", prompt)
	if err != nil {
		return Credential{}, err
	}
	m.opts.Redact.Add(tr.AccessToken)
	c, err := m.copilotExchange(ctx, Credential{RefreshToken: tr.AccessToken})
	if err != nil {
		return Credential{}, err
	}
	c.SignedInAt = m.opts.Now()
	if err := m.save(Copilot, c); err != nil {
		return Credential{}, err
	}
	return c, nil
}

// copilotToken is the answer of /copilot_internal/v2/token.
type copilotToken struct {
	Token     string `json:"token"`
	ExpiresAt int64  `json:"expires_at"`
	RefreshIn int64  `json:"refresh_in"`
	Endpoints struct {
		API string `json:"api"`
	} `json:"endpoints"`
}

// copilotExchange trades the GitHub token (cur.RefreshToken) for a fresh
// short-lived Copilot token.
func (m *Manager) copilotExchange(ctx context.Context, cur Credential) (Credential, error) {
	if cur.RefreshToken == "" {
		return Credential{}, &providers.SignInError{Provider: Copilot, Reason: "no GitHub token is stored"}
	}
	ep := m.endpoints(Copilot)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep.ExchangeBase+"/copilot_internal/v2/token", nil)
	if err != nil {
		return Credential{}, fmt.Errorf("%s: %w", Copilot, err)
	}
	req.Header.Set("Authorization", "token "+cur.RefreshToken)
	req.Header.Set("Accept", "application/json")
	for k, v := range copilotHeaders {
		req.Header.Set(k, v)
	}
	r, err := m.send(Copilot, req)
	if err != nil {
		return Credential{}, err
	}
	switch {
	case r.status == http.StatusUnauthorized:
		return Credential{}, &providers.SignInError{Provider: Copilot, Reason: "GitHub refused the stored token (revoked or expired)"}
	case r.status == http.StatusForbidden || r.status == http.StatusNotFound:
		return Credential{}, &providers.SignInError{Provider: Copilot, Reason: "this GitHub account has no Copilot access"}
	case r.status != http.StatusOK:
		return Credential{}, fmt.Errorf("%s: exchange for a Copilot token: %w", Copilot, r.asError(Copilot, cur.RefreshToken))
	}
	var ct copilotToken
	if err := decodeJSON(Copilot, "Copilot token", r.body, &ct); err != nil {
		return Credential{}, err
	}
	if ct.Token == "" {
		return Credential{}, fmt.Errorf("%s: the Copilot token answer has no token", Copilot)
	}
	next := cur
	next.AccessToken = ct.Token
	next.Endpoint = ct.Endpoints.API
	next.ExpiresAt = time.Time{}
	if ct.ExpiresAt > 0 {
		next.ExpiresAt = time.Unix(ct.ExpiresAt, 0).UTC()
	}
	m.opts.Redact.Add(ct.Token)
	return next, nil
}
