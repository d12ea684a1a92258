package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// userAgent names us to the server; some gateways refuse Go's default.
const userAgent = "nanobot (OpenAI-compatible)"

// maxEventSize bounds one server-sent event (a completed Responses event
// repeats the whole answer).
const maxEventSize = 32 << 20

// endpoint is the URL of an API path ("chat/completions", "responses").
func (p *Provider) endpoint(path, model string) string {
	base := strings.TrimRight(p.opts.APIBase, "/")
	if p.opts.AzureAPIVersion != "" {
		// The deployment is the model; the version is a query parameter.
		return base + "/openai/deployments/" + url.PathEscape(model) + "/" + path +
			"?api-version=" + url.QueryEscape(p.opts.AzureAPIVersion)
	}
	return base + "/" + path
}

// encode marshals a request body and applies Options.ExtraBody, whose
// top-level keys replace ours; stream, when set, is applied last so a
// configured body cannot turn a stream into a plain response.
func (p *Provider) encode(body any, stream bool) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	if len(p.opts.ExtraBody) == 0 {
		return b, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	for _, k := range slices.Sorted(maps.Keys(p.opts.ExtraBody)) {
		v, err := json.Marshal(p.opts.ExtraBody[k])
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

// post sends body to path and returns the response when its status is
// 2xx. Any other status is read and returned as an *httpStatus error.
func (p *Provider) post(ctx context.Context, path, model string, body []byte, stream bool) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint(path, model), bytes.NewReader(body))
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
	switch {
	case p.opts.AzureAPIVersion != "":
		h.Set("Api-Key", p.opts.APIKey)
	case p.opts.APIKey != "":
		h.Set("Authorization", "Bearer "+p.opts.APIKey)
	}
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

// call sends a non-streaming request and decodes the answer into out.
func (p *Provider) call(ctx context.Context, path, model string, body []byte, out any) error {
	res, err := p.post(ctx, path, model, body, false)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if err := decodeLenient(data, out); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	return nil
}

// httpStatus is a non-2xx answer, body bounded by maxErrorBody.
type httpStatus struct {
	code   int
	header http.Header
	body   []byte
}

func (e *httpStatus) Error() string { return fmt.Sprintf("http status %d", e.code) }

// sseReader reads a text/event-stream: lines of "event:" and "data:"
// fields, an empty line ending each event, ":" lines being comments. An
// event cut off by the end of the body is dropped.
type sseReader struct {
	scan *bufio.Scanner
	data []byte
}

func newSSEReader(r io.Reader) *sseReader {
	s := bufio.NewScanner(r)
	// The scanner starts small and grows to the longest line seen.
	s.Buffer(nil, maxEventSize)
	return &sseReader{scan: s}
}

// next returns the data of the next event (several data lines joined by
// newlines), or io.EOF at the end of the body, or the read error.
func (r *sseReader) next() ([]byte, error) {
	r.data = r.data[:0]
	for r.scan.Scan() {
		line := r.scan.Bytes()
		if len(line) == 0 {
			if len(r.data) == 0 {
				continue
			}
			return r.data, nil
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		// The event name repeats the payload's own type field, which is
		// what both APIs are read by.
		if string(name) == "data" {
			if len(r.data) > 0 {
				r.data = append(r.data, '\n')
			}
			r.data = append(r.data, value...)
		}
	}
	if err := r.scan.Err(); err != nil {
		return nil, err
	}
	return nil, io.EOF
}

// isDone reports OpenAI's end-of-stream marker.
func isDone(data []byte) bool { return bytes.HasPrefix(data, []byte("[DONE]")) }

// streamEventError is an error object sent inside a 200 stream.
type streamEventError struct{ data []byte }

func (e *streamEventError) Error() string { return "error event in stream" }
