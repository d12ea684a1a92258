package openai

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/internal/calltimer"
	"github.com/nanobot-go/nanobot/providers/internal/wire"
)

// classify turns a call's error into a *providers.Error. The call's own
// timeouts and the caller's cancellation come first: the transport reports
// them as plain context errors.
func (p *Provider) classify(t *calltimer.Timer, err error) error {
	if pe := t.Classify(p.name); pe != nil {
		return pe
	}
	var hs *wire.StatusError
	if errors.As(err, &hs) {
		return providers.HTTPError(p.name, hs.Code, hs.Header, hs.Body, p.opts.APIKey)
	}
	var se *wire.EventError
	if errors.As(err, &se) {
		return p.streamError(se)
	}
	return providers.NetworkError(p.name, err, p.opts.APIKey)
}

// streamError classifies an error event inside a 200 stream. Servers put
// an HTTP-like code in it when they have one; without one the failure is
// the server's and worth a retry.
func (p *Provider) streamError(se *wire.EventError) error {
	var ev struct {
		Error struct {
			Code any `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(se.Data, &ev)
	status := http.StatusInternalServerError
	if code, ok := ev.Error.Code.(float64); ok && code >= 400 && code < 600 {
		status = int(code)
	}
	pe := providers.HTTPError(p.name, status, nil, se.Data, p.opts.APIKey)
	pe.StatusCode = 0
	pe.Err = se
	return pe
}
