package openai

import (
	"encoding/json"
	"net/http"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/internal/calltimer"
	"github.com/nanobot-go/nanobot/providers/internal/wire"
)

// classify turns a call's error into a *providers.Error; see wire.Classify.
func (p *Provider) classify(t *calltimer.Timer, err error) error {
	return wire.Classify(t, p.name, p.opts.APIKey, err, p.streamError)
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
