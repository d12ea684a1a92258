package anthropic

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/internal/calltimer"
	"github.com/nanobot-go/nanobot/providers/internal/wire"
)

// classify turns a call's error into a *providers.Error (see
// wire.Classify); a stream whose events do not fit together is not worth
// a retry.
func (p *Provider) classify(t *calltimer.Timer, err error) error {
	var ms *malformedStream
	if errors.As(err, &ms) && t.Context().Err() == nil {
		return &providers.Error{Provider: p.name, Message: ms.Error(), Err: err}
	}
	return wire.Classify(t, p.name, p.opts.APIKey, err, eventStatus)
}

// eventStatus reads {"type":"error","error":{"type":"overloaded_error",...}}
// as the status the same error type has over HTTP.
func eventStatus(data []byte) int {
	var ev struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &ev)
	return statusOfErrorType(ev.Error.Type)
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
