package feishu

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/nanobot-go/nanobot/channels/kit"
)

// fetchToken gets a tenant_access_token (valid two hours).
func (c *Channel) fetchToken(ctx context.Context) (string, time.Duration, error) {
	var out struct {
		Token  string `json:"tenant_access_token"`
		Expire int    `json:"expire"`
	}
	err := c.open.Do(ctx, http.MethodPost, "/open-apis/auth/v3/tenant_access_token/internal",
		map[string]string{"app_id": c.cfg.AppID, "app_secret": c.cfg.AppSecret}, &out)
	if err != nil {
		return "", 0, fmt.Errorf("feishu: tenant access token: %w", err)
	}
	c.redact.Add(out.Token)
	ttl := time.Duration(out.Expire) * time.Second
	if ttl <= 0 {
		ttl = 30 * time.Minute
	}
	return out.Token, ttl, nil
}

// Codes by which the platform says the token is invalid or expired.
var tokenCodes = map[string]bool{"99991661": true, "99991663": true, "99991668": true, "99991671": true}

// call is api.Do, fetching a new token and trying once more when the
// platform says the token went stale.
func (c *Channel) call(ctx context.Context, method, path string, in, out any) error {
	err := c.api.Do(ctx, method, path, in, out)
	if stale(err) {
		if tok, terr := c.tokens.Get(ctx); terr == nil {
			c.tokens.Invalidate(tok)
		}
		err = c.api.Do(ctx, method, path, in, out)
	}
	return err
}

func stale(err error) bool {
	if kit.Unauthorized(err) {
		return true
	}
	var ae *kit.APIError
	return errors.As(err, &ae) && tokenCodes[ae.Code]
}

// rejected reports whether err is the platform refusing the credentials
// (an answer with an error code, not a network or server failure).
func rejected(err error) bool {
	var ae *kit.APIError
	if !errors.As(err, &ae) {
		return false
	}
	return ae.Code != "" && (ae.Status == http.StatusOK || (ae.Status >= 400 && ae.Status < 500 && ae.Status != http.StatusTooManyRequests))
}

// fetchBotID asks for the bot's open_id (mentions are matched by it).
func (c *Channel) fetchBotID(ctx context.Context) (string, error) {
	var out struct {
		Bot struct {
			OpenID  string `json:"open_id"`
			AppName string `json:"app_name"`
		} `json:"bot"`
	}
	if err := c.call(ctx, http.MethodGet, "/open-apis/bot/v3/info", nil, &out); err != nil {
		return "", fmt.Errorf("feishu: bot info: %w", err)
	}
	if out.Bot.OpenID == "" {
		return "", errors.New("feishu: bot info: no open_id (is the bot capability enabled?)")
	}
	return out.Bot.OpenID, nil
}

// clientConfig is what the endpoint call (and pong frames) configure.
type clientConfig struct {
	ReconnectCount    int `json:"ReconnectCount"`
	ReconnectInterval int `json:"ReconnectInterval"`
	ReconnectNonce    int `json:"ReconnectNonce"`
	PingInterval      int `json:"PingInterval"`
}

// endpoint asks for a long-connection URL.
func (c *Channel) endpoint(ctx context.Context) (string, clientConfig, error) {
	var out struct {
		Data struct {
			URL          string        `json:"URL"`
			ClientConfig *clientConfig `json:"ClientConfig"`
		} `json:"data"`
	}
	err := c.open.Do(ctx, http.MethodPost, "/callback/ws/endpoint",
		map[string]string{"AppID": c.cfg.AppID, "AppSecret": c.cfg.AppSecret}, &out)
	if err != nil {
		return "", clientConfig{}, fmt.Errorf("feishu: long-connection endpoint: %w", err)
	}
	if out.Data.URL == "" {
		return "", clientConfig{}, errors.New("feishu: long-connection endpoint: empty URL")
	}
	cc := clientConfig{PingInterval: 120}
	if out.Data.ClientConfig != nil {
		cc = *out.Data.ClientConfig
	}
	return out.Data.URL, cc, nil
}
