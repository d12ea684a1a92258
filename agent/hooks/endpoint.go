package hooks

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
)

// endpoint is a hook behind an HTTP URL: the request POSTed as JSON, the
// answer in the response body (any 2xx; an empty body is continue).
type endpoint struct {
	url    string
	token  string
	client *http.Client
}

func (e *endpoint) call(ctx context.Context, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "nanobot-hooks/1")
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponse+1))
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("answered HTTP %d", resp.StatusCode)
	}
	if len(out) > MaxResponse {
		return nil, fmt.Errorf("answered more than %d bytes", MaxResponse)
	}
	return out, nil
}
