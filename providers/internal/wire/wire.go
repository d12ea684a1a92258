// Package wire is the plumbing the lean vendor clients (providers/openai,
// providers/anthropic) share: a JSON POST that turns a non-2xx answer into
// a *StatusError, request encoding with the configured extra body, lenient
// response decoding, and a server-sent-events reader.
//
// Functions are safe for concurrent use; an SSEReader belongs to one
// goroutine, and the data it returns is valid until its next Next.
package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
)

// MaxErrorBody bounds how much of an error body is read.
const MaxErrorBody = 64 << 10

// StatusError is a non-2xx answer, its body bounded by MaxErrorBody.
type StatusError struct {
	Code   int
	Header http.Header
	Body   []byte
}

func (e *StatusError) Error() string { return fmt.Sprintf("http status %d", e.Code) }

// EventError is an error event inside a 200 stream; Data is its JSON.
type EventError struct{ Data []byte }

func (e *EventError) Error() string { return "error event in stream" }

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

// Encode marshals a request body and applies extra (config extraBody),
// whose top-level keys replace ours; for a stream, "stream": true is set
// last so a configured body cannot turn a stream into a plain response.
func Encode(body any, extra map[string]any, stream bool) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	if len(extra) == 0 {
		return b, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		v, err := json.Marshal(extra[k])
		if err != nil {
			return nil, fmt.Errorf("encode extraBody.%s: %w", k, err)
		}
		fields[k] = v
	}
	if stream {
		fields["stream"] = json.RawMessage("true")
	}
	return json.Marshal(fields)
}

// DecodeLenient unmarshals data into v, skipping fields of an unexpected
// JSON type (encoding/json fills everything else and reports the first
// such field), which is how the official SDKs treated servers that bend
// the format; malformed JSON is still an error.
func DecodeLenient(data []byte, v any) error {
	err := json.Unmarshal(data, v)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return nil
	}
	return err
}
