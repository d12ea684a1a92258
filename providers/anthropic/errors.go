package anthropic

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
	var se *wire.StatusError
	if errors.As(err, &se) {
		pe := providers.HTTPError(p.name, se.Code, se.Header, se.Body, p.opts.APIKey)
		pe.Err = err
		return pe
	}
	var ee *wire.EventError
	if errors.As(err, &ee) {
		return p.inBandError(ee.Data, err)
	}
	var ms *malformedStream
	if errors.As(err, &ms) {
		return &providers.Error{Provider: p.name, Message: ms.Error(), Err: err}
	}
	return providers.NetworkError(p.name, err, p.opts.APIKey)
}

// inBandError classifies {"type":"error","error":{"type":"overloaded_error",...}}
// by the status the same error type has over HTTP.
func (p *Provider) inBandError(body []byte, err error) error {
	var ev struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &ev)
	pe := providers.HTTPError(p.name, statusOfErrorType(ev.Error.Type), nil, body, p.opts.APIKey)
	pe.StatusCode = 0
	pe.Err = err
	return pe
}

func statusOfErrorType(t string) int {
	switch t {
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "billing_error":
		return http.StatusPaymentRequired
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "timeout_error":
		return http.StatusGatewayTimeout
	case "overloaded_error":
		return 529
	default:
		return http.StatusInternalServerError
	}
}
