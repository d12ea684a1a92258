package wire

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/internal/calltimer"
)

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

// Classify turns a call's error into a *providers.Error. The call's own
// timeouts and the caller's cancellation come first: the transport reports
// them as plain context errors. Then a non-2xx answer, by its status; then
// an error event of a stream, classified as the HTTP status that
// eventStatus reads from it in the vendor's shape would be (but reported
// without a status); anything else failed on the network. apiKey is
// redacted from messages.
func Classify(t *calltimer.Timer, provider, apiKey string, err error, eventStatus func(data []byte) int) error {
	if pe := t.Classify(provider); pe != nil {
		return pe
	}
	var se *StatusError
	if errors.As(err, &se) {
		return providers.HTTPError(provider, se.Code, se.Header, se.Body, apiKey)
	}
	var ee *EventError
	if errors.As(err, &ee) {
		pe := providers.HTTPError(provider, eventStatus(ee.Data), nil, ee.Data, apiKey)
		pe.StatusCode = 0
		pe.Err = ee
		return pe
	}
	return providers.NetworkError(provider, err, apiKey)
}
