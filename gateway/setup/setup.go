// Package setup is what a first-run setup needs, shared by the terminal
// wizard (`nanobot onboard --wizard`) and the workbench's setup page: live
// checks that a provider key or a chat platform's token works — one cheap
// call each (the provider's model list, Telegram's getMe, Slack's
// auth.test, Discord's users/@me) — and Inspect, which says what a config
// has set up and what it still lacks.
//
// A check's error is short and never holds the credential it was given:
// the platform's answer is cut to 200 characters with the credential and
// anything shaped like one masked, and a transport error drops the URL
// (Telegram's holds the token). The checker follows a redirect only to
// the same scheme and host: the key travels in a header, and a server that
// sends the request elsewhere does not get it sent on.
//
// A Checker is safe for concurrent use by any number of goroutines. It
// does not limit how often it is called: a caller that takes requests from
// a network (the workbench) does.
package setup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/internal/redact"
	"github.com/nanobot-go/nanobot/providers"
)

// The platforms' public APIs, where a check goes when neither the caller
// nor the config names another (the adapters' own defaults; a test in cmd
// holds them equal).
const (
	TelegramAPI = "https://api.telegram.org"
	SlackAPI    = "https://slack.com/api/"
	DiscordAPI  = "https://discord.com"
)

// Timeout bounds one check, connection and answer.
const Timeout = 15 * time.Second

// ErrNotChecked: there is no live check for this service (AWS Bedrock,
// Azure, a sign-in provider).
var ErrNotChecked = errors.New("no live check for this one")

// ErrRefused wraps a check the service answered with "no": the key or
// token is wrong, revoked, or lacks the right.
var ErrRefused = errors.New("refused")

// Checker asks services whether credentials work. The zero value checks
// the public APIs, as New's does.
type Checker struct {
	// TelegramBase, SlackBase and DiscordBase are where each platform's
	// API is when a check names none ("" : the public API). Tests point
	// them at fakes.
	TelegramBase, SlackBase, DiscordBase string

	client *http.Client
}

// New returns a Checker of the public APIs with a Timeout client.
func New() *Checker { return &Checker{client: newClient()} }

func newClient() *http.Client {
	return &http.Client{Timeout: Timeout, CheckRedirect: sameHostOnly}
}

// sameHostOnly follows at most three redirects, and only to the scheme and
// host asked: elsewhere, the redirect itself is the answer (and an error).
func sameHostOnly(req *http.Request, via []*http.Request) error {
	if len(via) >= 3 {
		return errors.New("too many redirects")
	}
	if first := via[0].URL; req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return http.ErrUseLastResponse
	}
	return nil
}

func (c *Checker) httpClient() *http.Client {
	if c.client == nil {
		return newClient()
	}
	return c.client
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// scrub masks secret and anything shaped like a credential in s.
func scrub(s, secret string) string {
	if secret != "" {
		s = strings.ReplaceAll(s, secret, redact.Mask)
	}
	return redact.Shapes(s)
}

// do sends req and decodes a JSON answer into out; noun names the
// credential in messages ("key", "token"). The error names the HTTP status
// and what the service said, cut short, without secret.
func (c *Checker) do(req *http.Request, noun, secret string, out any) error {
	resp, err := c.httpClient().Do(req)
	if err != nil {
		// A *url.Error quotes the URL, and Telegram's holds the token.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("cannot reach %s: %s", req.URL.Host, scrub(err.Error(), secret))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode/100 == 3:
		to := "elsewhere"
		if loc, err := resp.Location(); err == nil {
			to = loc.Scheme + "://" + loc.Host
		}
		return fmt.Errorf("the server sent the request on to %s; not followed, so the %s stays where you sent it", to, noun)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("the %s was %w (HTTP %d)", noun, ErrRefused, resp.StatusCode)
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, scrub(strings.TrimSpace(string(body)), secret))
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("an answer that is not JSON: %.100s", scrub(string(body), secret))
		}
	}
	return nil
}

// maxModels bounds the model names Provider returns (an aggregator lists
// hundreds).
const maxModels = 500

// Provider lists the models of spec at base with key: the cheapest call
// that proves the key. It returns the model ids the provider listed (at
// most maxModels), or ErrNotChecked for a service it cannot ask that way.
// base "" is the spec's default; key "" sends none (a local server).
func (c *Checker) Provider(ctx context.Context, spec providers.ProviderSpec, base, key string) ([]string, error) {
	base = strings.TrimRight(or(base, spec.DefaultAPIBase), "/")
	if base == "" {
		return nil, fmt.Errorf("%s needs an API base URL", spec.DisplayName)
	}
	var req *http.Request
	var err error
	switch spec.Backend {
	case providers.BackendAnthropic:
		if req, err = http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/models", nil); err != nil {
			return nil, badBase(err)
		}
		req.Header.Set("x-api-key", key)
		req.Header.Set("anthropic-version", "2023-06-01")
	case providers.BackendOpenAICompat, providers.BackendOpenAIResponses:
		if spec.SignIn {
			return nil, ErrNotChecked
		}
		if req, err = http.NewRequestWithContext(ctx, http.MethodGet, base+"/models", nil); err != nil {
			return nil, badBase(err)
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
	default:
		return nil, ErrNotChecked
	}
	var out struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := c.do(req, "key", key, &out); err != nil {
		return nil, err
	}
	ids := make([]string, 0, min(len(out.Data), maxModels))
	for _, m := range out.Data {
		if len(ids) == maxModels {
			break
		}
		ids = append(ids, m.ID)
	}
	return ids, nil
}

// badBase is the error of a base URL a request cannot be made of (the URL
// holds no secret: the key travels in a header).
func badBase(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("not a usable API base URL: %w", err)
}

// Telegram asks getMe with token and returns the bot's username. base ""
// is TelegramBase, else Telegram itself.
func (c *Checker) Telegram(ctx context.Context, base, token string) (string, error) {
	if strings.TrimSpace(token) == "" {
		return "", errors.New("no token")
	}
	base = strings.TrimRight(or(base, or(c.TelegramBase, TelegramAPI)), "/")
	// The token is part of the path: escaped, it cannot step out of it.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/bot"+url.PathEscape(token)+"/getMe", nil)
	if err != nil {
		return "", badBase(err)
	}
	var out struct {
		OK     bool `json:"ok"`
		Result struct {
			Username string `json:"username"`
		} `json:"result"`
		Description string `json:"description"`
	}
	if err := c.do(req, "token", token, &out); err != nil {
		return "", err
	}
	if !out.OK {
		return "", fmt.Errorf("Telegram said: %.200s", scrub(out.Description, token))
	}
	return out.Result.Username, nil
}

// Slack asks auth.test with the bot token and returns the workspace's
// name. base "" is SlackBase, else Slack itself.
func (c *Checker) Slack(ctx context.Context, base, botToken string) (string, error) {
	if strings.TrimSpace(botToken) == "" {
		return "", errors.New("no token")
	}
	base = or(base, or(c.SlackBase, SlackAPI))
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"auth.test", nil)
	if err != nil {
		return "", badBase(err)
	}
	req.Header.Set("Authorization", "Bearer "+botToken)
	var out struct {
		OK    bool   `json:"ok"`
		Team  string `json:"team"`
		Error string `json:"error"`
	}
	if err := c.do(req, "token", botToken, &out); err != nil {
		return "", err
	}
	if !out.OK {
		// Slack answers a bad token with HTTP 200 and ok: false.
		if out.Error == "invalid_auth" || out.Error == "not_authed" || out.Error == "account_inactive" || out.Error == "token_revoked" {
			return "", fmt.Errorf("the token was %w (Slack said: %s)", ErrRefused, scrub(out.Error, botToken))
		}
		return "", fmt.Errorf("Slack said: %.200s", scrub(out.Error, botToken))
	}
	return out.Team, nil
}

// Discord asks GET /users/@me with the bot token ("Bot <token>") and
// returns the bot's username. base "" is DiscordBase, else Discord itself
// (the same base the adapter's apiBase replaces).
func (c *Checker) Discord(ctx context.Context, base, token string) (string, error) {
	switch {
	case strings.TrimSpace(token) == "":
		return "", errors.New("no token")
	case strings.HasPrefix(token, "Bot "):
		return "", errors.New(`leave out the "Bot " prefix`)
	}
	base = strings.TrimRight(or(base, or(c.DiscordBase, DiscordAPI)), "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v10/users/@me", nil)
	if err != nil {
		return "", badBase(err)
	}
	req.Header.Set("Authorization", "Bot "+token)
	var out struct {
		Username string `json:"username"`
		Bot      bool   `json:"bot"`
	}
	if err := c.do(req, "token", token, &out); err != nil {
		return "", err
	}
	if !out.Bot {
		return "", errors.New("Discord accepted the token, but it is not a bot's (developer portal > your app > Bot > Reset Token)")
	}
	return out.Username, nil
}
