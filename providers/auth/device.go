package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/nanobot-go/nanobot/providers"
)

// Prompt is what the user must do to finish a sign-in: open URL (and,
// for a device flow, enter UserCode there).
type Prompt struct {
	URL      string
	UserCode string
	// ExpiresAt is when the code stops working (zero: unknown).
	ExpiresAt time.Time
}

// Device-flow outcomes the user must act on.
var (
	// ErrCodeExpired: the user code expired before it was approved.
	ErrCodeExpired = errors.New("the sign-in code expired before it was approved; run the login again")
	// ErrAccessDenied: the user (or the service) declined the sign-in.
	ErrAccessDenied = errors.New("the sign-in was denied")
)

// slowDownStep is what RFC 8628 section 3.5 adds to the interval on slow_down.
const slowDownStep = 5 * time.Second

// deviceCode is RFC 8628's device authorization response.
type deviceCode struct {
	DeviceCode      string `json:"device_code"`
	UserCode        string `json:"user_code"`
	VerificationURI string `json:"verification_uri"`
	ExpiresIn       int64  `json:"expires_in"`
	Interval        int64  `json:"interval"`
}

// deviceFlow runs RFC 8628 against codeURL and tokenURL: it asks for a
// code, shows it through prompt, and polls at the server's interval
// (growing by 5 s on each slow_down) until the user approves, declines or
// the code expires.
func (m *Manager) deviceFlow(ctx context.Context, provider, codeURL, tokenURL, clientID, scope string, prompt func(Prompt)) (tokenResponse, error) {
	r, err := m.postForm(ctx, provider, codeURL, url.Values{"client_id": {clientID}, "scope": {scope}})
	if err != nil {
		return tokenResponse{}, err
	}
	if r.status != http.StatusOK {
		return tokenResponse{}, fmt.Errorf("%s: request a device code: %w", provider, r.asError(provider))
	}
	var dc deviceCode
	if err := decodeJSON(provider, "device code", r.body, &dc); err != nil {
		return tokenResponse{}, err
	}
	if dc.DeviceCode == "" || dc.UserCode == "" || dc.VerificationURI == "" {
		return tokenResponse{}, fmt.Errorf("%s: device code answer lacks device_code, user_code or verification_uri", provider)
	}
	interval := time.Duration(dc.Interval) * time.Second
	if interval <= 0 {
		interval = 5 * time.Second
	}
	var deadline time.Time
	if dc.ExpiresIn > 0 {
		deadline = m.opts.Now().Add(time.Duration(dc.ExpiresIn) * time.Second)
	}
	prompt(Prompt{URL: dc.VerificationURI, UserCode: dc.UserCode, ExpiresAt: deadline})

	form := url.Values{
		"client_id":   {clientID},
		"device_code": {dc.DeviceCode},
		"grant_type":  {"urn:ietf:params:oauth:grant-type:device_code"},
	}
	for {
		if !deadline.IsZero() && !m.opts.Now().Before(deadline) {
			return tokenResponse{}, fmt.Errorf("%s: %w", provider, ErrCodeExpired)
		}
		if err := m.opts.Wait(ctx, interval); err != nil {
			return tokenResponse{}, providers.Canceled(provider, err)
		}
		r, err := m.postForm(ctx, provider, tokenURL, form)
		if err != nil {
			if providers.IsTransient(err) {
				continue
			}
			return tokenResponse{}, err
		}
		oe := r.oauthError()
		switch oe.Code {
		case "":
		case "authorization_pending":
			continue
		case "slow_down":
			interval += slowDownStep
			var hint struct {
				Interval json.Number `json:"interval"`
			}
			if json.Unmarshal(r.body, &hint) == nil {
				if n, err := strconv.ParseInt(hint.Interval.String(), 10, 64); err == nil && time.Duration(n)*time.Second > interval {
					interval = time.Duration(n) * time.Second
				}
			}
			m.log.Debug("device flow: slow_down", "provider", provider, "interval", interval)
			continue
		case "expired_token":
			return tokenResponse{}, fmt.Errorf("%s: %w", provider, ErrCodeExpired)
		case "access_denied":
			return tokenResponse{}, fmt.Errorf("%s: %w", provider, ErrAccessDenied)
		default:
			return tokenResponse{}, fmt.Errorf("%s: device flow: %w", provider, r.asError(provider, dc.DeviceCode))
		}
		if r.status != http.StatusOK {
			return tokenResponse{}, fmt.Errorf("%s: device flow: %w", provider, r.asError(provider, dc.DeviceCode))
		}
		return decodeToken(provider, "device flow token", r.body)
	}
}
