package wire

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
)

// MaxErrorBody bounds how much of an error body is read.
const MaxErrorBody = 64 << 10

// Post sends body (JSON) to url with header, which is applied over the
// Content-Type and Accept that Post sets, and returns the response when
// its status is 2xx. Any other status is read and returned as a
// *StatusError.
func Post(ctx context.Context, client *http.Client, url string, header http.Header, body []byte, stream bool) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		return res, nil
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(res.Body, MaxErrorBody))
	return nil, &StatusError{Code: res.StatusCode, Header: res.Header, Body: data}
}

// Call posts a non-streaming request and decodes the answer into out
// with DecodeLenient.
func Call(ctx context.Context, client *http.Client, url string, header http.Header, body []byte, out any) error {
	res, err := Post(ctx, client, url, header, body, false)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if err := DecodeLenient(data, out); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	return nil
}
