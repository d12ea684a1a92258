package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/providers"
)

// checker asks the services whether the keys the wizard was given work.
// Every answer it shows is cut short and never echoes the key.
type checker struct{ client *http.Client }

func newChecker() checker { return checker{client: &http.Client{Timeout: 15 * time.Second}} }

// get sends req and decodes a JSON answer into out; the error names the
// HTTP status and what the service said.
func (c checker) do(req *http.Request, out any) error {
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach %s: %v", req.URL.Host, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("the key was refused (HTTP %d)", resp.StatusCode)
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("an answer that is not JSON: %.100s", body)
		}
	}
	return nil
}

// provider lists the models of spec at base with key: the cheapest call
// that proves the key. It returns how many models the provider listed.
func (c checker) provider(ctx context.Context, spec providers.ProviderSpec, base, key string) (int, error) {
	var req *http.Request
	var err error
	base = strings.TrimRight(base, "/")
	switch spec.Backend {
	case providers.BackendAnthropic:
		if req, err = http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/models", nil); err != nil {
			return 0, err
		}
		req.Header.Set("x-api-key", key)
		req.Header.Set("anthropic-version", "2023-06-01")
	case providers.BackendOpenAICompat, providers.BackendOpenAIResponses:
		if req, err = http.NewRequestWithContext(ctx, http.MethodGet, base+"/models", nil); err != nil {
			return 0, err
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
	default:
		return 0, errNotChecked
	}
	var out struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := c.do(req, &out); err != nil {
		return 0, err
	}
	return len(out.Data), nil
}

// errNotChecked: the wizard has no check for this service.
var errNotChecked = fmt.Errorf("no live check for this one")

// telegram asks getMe and returns the bot's username.
func (c checker) telegram(ctx context.Context, base, token string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/bot"+token+"/getMe", nil)
	if err != nil {
		return "", err
	}
	var out struct {
		OK     bool `json:"ok"`
		Result struct {
			Username string `json:"username"`
		} `json:"result"`
		Description string `json:"description"`
	}
	if err := c.do(req, &out); err != nil {
		return "", err
	}
	if !out.OK {
		return "", fmt.Errorf("Telegram said: %s", out.Description)
	}
	return out.Result.Username, nil
}

// slack asks auth.test with the bot token and returns the workspace.
func (c checker) slack(ctx context.Context, base, botToken string) (string, error) {
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"auth.test", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+botToken)
	var out struct {
		OK    bool   `json:"ok"`
		Team  string `json:"team"`
		Error string `json:"error"`
	}
	if err := c.do(req, &out); err != nil {
		return "", err
	}
	if !out.OK {
		return "", fmt.Errorf("Slack said: %s", out.Error)
	}
	return out.Team, nil
}
