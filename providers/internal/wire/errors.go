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
// an error event of a stream, which inBand reads in the vendor's shape;
// anything else failed on the network. apiKey is redacted from messages.
func Classify(t *calltimer.Timer, provider, apiKey string, err error, inBand func(*EventError) error) error {
	if pe := t.Classify(provider); pe != nil {
		return pe
	}
	var se *StatusError
	if errors.As(err, &se) {
		return providers.HTTPError(provider, se.Code, se.Header, se.Body, apiKey)
	}
	var ee *EventError
	if errors.As(err, &ee) {
		return inBand(ee)
	}
	return providers.NetworkError(provider, err, apiKey)
}
