package openai

import (
	"encoding/json"
	"net/http"

	"github.com/nanobot-go/nanobot/providers/internal/calltimer"
	"github.com/nanobot-go/nanobot/providers/internal/wire"
)

// classify turns a call's error into a *providers.Error; see wire.Classify.
func (p *Provider) classify(t *calltimer.Timer, err error) error {
	return wire.Classify(t, p.name, p.opts.APIKey, err, eventStatus)
}

// eventStatus reads an error event inside a 200 stream. Servers put an
// HTTP-like code in it when they have one; without one the failure is the
// server's and worth a retry.
func eventStatus(data []byte) int {
	var ev struct {
		Error struct {
			Code any `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &ev)
	if code, ok := ev.Error.Code.(float64); ok && code >= 400 && code < 600 {
		return int(code)
	}
	return http.StatusInternalServerError
}
