package anthropic

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	ant "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/internal/calltimer"
)

// maxErrorBody bounds how much of an error body is read.
const maxErrorBody = 64 << 10

// streamErrorPrefix is how the SDK reports an error event inside a stream
// when it cannot build a typed error.
const streamErrorPrefix = "received error while streaming: "

// classify turns an SDK error into a *providers.Error.
func (p *Provider) classify(t *calltimer.Timer, err error) error {
	if pe := t.Classify(p.name); pe != nil {
		return pe
	}
	var apiErr *ant.Error
	if errors.As(err, &apiErr) {
		body := []byte(apiErr.RawJSON())
		var header http.Header
		if res := apiErr.Response; res != nil {
			header = res.Header
			if len(body) == 0 && res.Body != nil {
				body, _ = io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
			}
		}
		if apiErr.StatusCode < 400 {
			// An error event inside a 200 stream.
			return p.inBandError(body, err)
		}
		pe := providers.HTTPError(p.name, apiErr.StatusCode, header, body, p.opts.APIKey)
		pe.Err = err
		return pe
	}
	if rest, ok := strings.CutPrefix(err.Error(), streamErrorPrefix); ok {
		return p.inBandError([]byte(rest), err)
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
