package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
)

// apiVersion is the anthropic-version header: the Messages API version
// whose wire this package speaks.
const apiVersion = "2026-10-21"

// userAgent names us to the server.
const userAgent = "nanobot (Anthropic Messages)"

// encode marshals a request and applies Options.ExtraBody, whose top-level
// keys replace ours; stream is set last so a configured body cannot turn a
// stream into a plain response.
func (p *Provider) encode(req *messageRequest, stream bool) ([]byte, error) {
	req.Stream = stream
	b, err := json.Marshal(req)
	if err != nil || len(p.opts.ExtraBody) == 0 {
		return b, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, err
	}
	for _, k := range slices.Sorted(maps.Keys(p.opts.ExtraBody)) {
		v, err := json.Marshal(p.opts.ExtraBody[k])
		if err != nil {
			return nil, fmt.Errorf("extraBody.%s: %w", k, err)
		}
		fields[k] = v
	}
	if stream {
		fields["stream"] = json.RawMessage("true")
	}
	return json.Marshal(fields)
}

// post sends a Messages request and returns the response when its status
// is 2xx; any other status is read and returned as an *httpStatus error.
func (p *Provider) post(ctx context.Context, body []byte, stream bool) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/v1/messages", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	if stream {
		h.Set("Accept", "text/event-stream")
	} else {
		h.Set("Accept", "application/json")
	}
	h.Set("User-Agent", userAgent)
	h.Set("Anthropic-Version", apiVersion)
	if p.opts.APIKey != "" {
		h.Set("Authorization", "Bearer "+p.opts.APIKey)
	}
	// anthropic-beta, a gateway's own header, or another auth header.
	for k, v := range p.opts.ExtraHeaders {
		h.Set(k, v)
	}
	res, err := p.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		return res, nil
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	return nil, &httpStatus{code: res.StatusCode, header: res.Header, body: data}
}

// httpStatus is a non-2xx answer, body bounded by maxErrorBody.
type httpStatus struct {
	code   int
	header http.Header
	body   []byte
}

func (e *httpStatus) Error() string { return fmt.Sprintf("http status %d", e.code) }

// streamEventError is an error event inside a 200 stream.
type streamEventError struct{ data []byte }

func (e *streamEventError) Error() string { return "error event in stream" }
