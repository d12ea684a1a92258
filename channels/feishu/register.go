package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/channels/kit"
)

// AccountsURLs are the services that create a bot by QR code, by domain.
var AccountsURLs = map[string]string{
	"feishu": "https://accounts.feishu.cn",
	"lark":   "https://accounts.larksuite.com",
}

// registrationPath is the device-code registration endpoint: form posts
// with action init, begin and poll, JSON answers (also with 4xx statuses
// while the scan is pending).
const registrationPath = "/oauth/v1/app/registration"

// Registration is the bot application a scan created.
type Registration struct {
	AppID, AppSecret string
	// Domain is "feishu" or "lark", as the scanning account's tenant is.
	Domain string
}

// Registrar creates a bot application by QR code, the way the Feishu and
// Lark apps offer it (the Python nanobot's `channels login feishu`): the
// person scans the code with the mobile app, the platform creates a
// configured bot, and its app id and secret come back here.
type Registrar struct {
	// Domain is where to start, "feishu" (default) or "lark"; a scan by a
	// Lark account moves the polls to Lark.
	Domain string
	// URLs overrides AccountsURLs (tests).
	URLs map[string]string
	// HTTP is the client (default: 10 s per request).
	HTTP *http.Client
}

// ErrRegistrationDenied is a scan that was declined or expired.
var ErrRegistrationDenied = errors.New("feishu: the bot was not created: the request was declined or expired; run the login again")

// Register runs the flow: show receives the QR code (as text, with its
// link) once; Register returns when the scan succeeded, was declined,
// expired, or ctx ended.
func (r Registrar) Register(ctx context.Context, show func(string)) (Registration, error) {
	domain := r.Domain
	if domain == "" {
		domain = "feishu"
	}
	init, err := r.post(ctx, domain, url.Values{"action": {"init"}})
	if err != nil {
		return Registration{}, err
	}
	var methods []string
	_ = json.Unmarshal(init["supported_auth_methods"], &methods)
	if !slices.Contains(methods, "client_secret") {
		return Registration{}, fmt.Errorf("feishu: QR registration here does not offer client_secret apps (it offers %v); create the app in the developer console instead", methods)
	}
	begin, err := r.post(ctx, domain, url.Values{"action": {"begin"}, "archetype": {"PersonalAgent"}, "auth_method": {"client_secret"}, "request_user_info": {"open_id"}})
	if err != nil {
		return Registration{}, err
	}
	device, link := str(begin["device_code"]), str(begin["verification_uri_complete"])
	if device == "" || link == "" {
		return Registration{}, errors.New("feishu: the registration service gave no device code or link")
	}
	interval, expires := num(begin["interval"], 5), num(begin["expire_in"], 600)
	show(fmt.Sprintf("Scan with the Feishu or Lark app to create the bot (valid %s):\n%s\nor open %s", time.Duration(expires)*time.Second, kit.RenderQR(link), link))
	deadline := time.NewTimer(time.Duration(expires) * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(time.Duration(interval) * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return Registration{}, ctx.Err()
		case <-deadline.C:
			return Registration{}, ErrRegistrationDenied
		case <-tick.C:
		}
		res, err := r.post(ctx, domain, url.Values{"action": {"poll"}, "device_code": {device}, "tp": {"ob_app"}})
		if err != nil {
			if ctx.Err() != nil {
				return Registration{}, ctx.Err()
			}
			continue // a network blip: the next poll tries again
		}
		var user struct {
			TenantBrand string `json:"tenant_brand"`
		}
		_ = json.Unmarshal(res["user_info"], &user)
		if user.TenantBrand == "lark" {
			domain = "lark"
		}
		if id, secret := str(res["client_id"]), str(res["client_secret"]); id != "" && secret != "" {
			return Registration{AppID: id, AppSecret: secret, Domain: domain}, nil
		}
		switch str(res["error"]) {
		case "access_denied", "expired_token":
			return Registration{}, ErrRegistrationDenied
		case "slow_down":
			// RFC 8628 section 3.5: poll 5 s less often from now on.
			interval += 5
			tick.Reset(time.Duration(interval) * time.Second)
		}
	}
}

// post sends one form to the registration endpoint of domain and decodes
// its JSON answer, whatever the status (a pending poll is a 400).
func (r Registrar) post(ctx context.Context, domain string, form url.Values) (map[string]json.RawMessage, error) {
	urls := r.URLs
	if urls == nil {
		urls = AccountsURLs
	}
	base, ok := urls[domain]
	if !ok {
		return nil, fmt.Errorf("feishu: unknown domain %q (want feishu or lark)", domain)
	}
	hc := r.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+registrationPath, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("feishu: registration (%s): %w", form.Get("action"), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("feishu: registration (%s): %w", form.Get("action"), err)
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("feishu: registration (%s): HTTP %d and an answer that is not JSON", form.Get("action"), resp.StatusCode)
	}
	return out, nil
}

func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

func num(raw json.RawMessage, def int) int {
	var n int
	if json.Unmarshal(raw, &n) != nil || n <= 0 {
		return def
	}
	return n
}
