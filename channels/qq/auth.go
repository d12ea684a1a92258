package qq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/channels/kit"
)

// tokenPath is where bots.qq.com hands out app access tokens.
const tokenPath = "/app/getAppAccessToken"

// defaultTokenTTL is used when the answer has no expires_in (QQ says 7200 s).
const defaultTokenTTL = 7200 * time.Second

// fetchToken asks for an app access token: POST {appId, clientSecret} ->
// {access_token, expires_in} where expires_in is a string of seconds (a
// number is accepted too).
func (c *Channel) fetchToken(ctx context.Context) (string, time.Duration, error) {
	var out struct {
		AccessToken string          `json:"access_token"`
		ExpiresIn   json.RawMessage `json:"expires_in"`
	}
	in := map[string]string{"appId": c.cfg.AppID, "clientSecret": c.cfg.Secret}
	if err := c.auth.Do(ctx, http.MethodPost, tokenPath, in, &out); err != nil {
		return "", 0, fmt.Errorf("qq: access token: %w", err)
	}
	ttl := defaultTokenTTL
	if s := strings.Trim(string(out.ExpiresIn), `" `); s != "" && s != "null" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return "", 0, fmt.Errorf("qq: access token: expires_in %q is not a positive number of seconds", s)
		}
		ttl = time.Duration(n) * time.Second
	}
	c.redact.Add(out.AccessToken)
	return out.AccessToken, ttl, nil
}

// credentialsRejected reports whether err is the token endpoint refusing
// the appId/secret (an error envelope or a 4xx other than 429): retrying
// cannot help until the config changes.
func credentialsRejected(err error) bool {
	var ae *kit.APIError
	if !errors.As(err, &ae) || !strings.Contains(ae.Op, tokenPath) {
		return false
	}
	return ae.Code != "" || (ae.Status >= 400 && ae.Status < 500 && ae.Status != http.StatusTooManyRequests && ae.Status != http.StatusRequestTimeout)
}

// call runs one REST call, fetching a new token once when the platform
// says the current one is no longer valid (HTTP 401).
func (c *Channel) call(ctx context.Context, method, path string, in, out any) error {
	for attempt := 0; ; attempt++ {
		tok, err := c.tokens.Get(ctx)
		if err != nil {
			return fmt.Errorf("%s %s: credentials: %s", method, path, c.redact.Error(err))
		}
		err = c.api.Do(ctx, method, path, in, out)
		if attempt == 0 && kit.Unauthorized(err) {
			c.tokens.Invalidate(tok)
			continue
		}
		return err
	}
}
