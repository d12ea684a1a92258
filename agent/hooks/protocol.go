package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Version is the protocol version sent in every request. A change that
// would break a hook written for it gets a new number.
const Version = 1

// MaxResponse caps what a hook may answer (stdout or HTTP body).
const MaxResponse = 1 << 20

// Request is what a hook receives: the point, who and where, and the
// point's data.
type Request struct {
	Version int            `json:"version"`
	Hook    string         `json:"hook"`
	Point   string         `json:"point"`
	Session string         `json:"session,omitempty"`
	Channel string         `json:"channel,omitempty"`
	Chat    string         `json:"chat,omitempty"`
	Sender  string         `json:"sender,omitempty"`
	Data    map[string]any `json:"data"`
}

// Actions a hook may answer.
const (
	ActionContinue = "continue"
	ActionModify   = "modify"
	ActionVeto     = "veto"
)

// Response is what a hook answers. An empty answer is continue.
type Response struct {
	Action string         `json:"action"`
	Data   map[string]any `json:"data,omitempty"`
	Reason string         `json:"reason,omitempty"`
}

// ErrBadResponse is a hook's answer that is not the protocol.
var ErrBadResponse = errors.New("hooks: the answer is not the hook protocol")

func decodeResponse(b []byte) (Response, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return Response{Action: ActionContinue}, nil
	}
	var r Response
	if err := json.Unmarshal(b, &r); err != nil {
		return Response{}, fmt.Errorf("%w: %w", ErrBadResponse, err)
	}
	switch r.Action {
	case "":
		r.Action = ActionContinue
	case ActionContinue, ActionModify, ActionVeto:
	default:
		return Response{}, fmt.Errorf("%w: unknown action %q (want continue, modify or veto)", ErrBadResponse, r.Action)
	}
	return r, nil
}
