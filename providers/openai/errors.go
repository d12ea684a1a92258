package openai

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/internal/calltimer"
)

// maxErrorBody bounds how much of an error body is read.
const maxErrorBody = 64 << 10

// classify turns an SDK error into a *providers.Error. The call's own
// timeouts and the caller's cancellation come first: the SDK reports them
// as plain context errors.
func (p *Provider) classify(t *calltimer.Timer, err error) error {
	if pe := t.Classify(p.name); pe != nil {
		return pe
	}
	var apiErr *oai.Error
	if errors.As(err, &apiErr) {
		var (
			body   []byte
			header http.Header
		)
		if res := apiErr.Response; res != nil {
			header = res.Header
			if res.Body != nil {
				// The SDK re-fills the body with what it read.
				body, _ = io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
			}
		}
		if len(body) == 0 {
			body = []byte(apiErr.RawJSON())
		}
		pe := providers.HTTPError(p.name, apiErr.StatusCode, header, body, p.opts.APIKey)
		pe.Err = err
		return pe
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		return p.streamError(se)
	}
	return providers.NetworkError(p.name, err, p.opts.APIKey)
}

// streamError classifies an error event inside a 200 stream. Servers put
// an HTTP-like code in it when they have one; without one the failure is
// the server's and worth a retry.
func (p *Provider) streamError(se *ssestream.StreamError) error {
	var ev struct {
		Error struct {
			Code any `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(se.Event.Data, &ev)
	status := http.StatusInternalServerError
	if code, ok := ev.Error.Code.(float64); ok && code >= 400 && code < 600 {
		status = int(code)
	}
	pe := providers.HTTPError(p.name, status, nil, se.Event.Data, p.opts.APIKey)
	pe.StatusCode = 0
	pe.Err = se
	return pe
}
