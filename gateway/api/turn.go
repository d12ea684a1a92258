package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/internal/reqbody"
)

// badRequest is a 400 naming the field at fault.
type badRequest struct{ param, msg string }

func (e *badRequest) Error() string { return e.msg }

func bad(param, format string, args ...any) *badRequest {
	return &badRequest{param: param, msg: param + ": " + fmt.Sprintf(format, args...)}
}

// writeRequestError answers a request that could not be read.
func writeRequestError(w http.ResponseWriter, err error) {
	var br *badRequest
	var tooBig *http.MaxBytesError
	var upload *uploadTooLarge
	var nf *notFound
	switch {
	case errors.As(err, &br):
		writeParamError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request", br.param, br.msg)
	case errors.As(err, &nf):
		writeParamError(w, http.StatusNotFound, "invalid_request_error", nf.code, nf.param, nf.msg)
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", fmt.Sprintf("request body is larger than %d bytes (api.maxBodyBytes)", tooBig.Limit))
	case errors.As(err, &upload):
		writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", upload.Error())
	case reqbody.Status(err) == http.StatusRequestTimeout:
		writeError(w, http.StatusRequestTimeout, "invalid_request_error", "request_timeout", "the request body did not arrive in time")
	default:
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request", "could not read the request body")
	}
}

// notFound is a 404 for something the request names.
type notFound struct{ param, code, msg string }

func (e *notFound) Error() string { return e.msg }

// decodeJSON reads a JSON body of at most api.maxBodyBytes into v.
func (c *Channel) decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return &badRequest{msg: "Content-Type must be application/json or multipart/form-data"}
		}
	}
	body, err := reqbody.Read(w, r, c.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if te.Field == "" {
				return &badRequest{msg: "the request body must be a JSON object"}
			}
			return bad(te.Field, "want %s, got %s", jsonKind(te.Type.Kind().String()), te.Value)
		}
		return &badRequest{msg: "invalid JSON in request body: " + err.Error()}
	}
	return nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "bool":
		return "a boolean"
	case "string":
		return "a string"
	case "slice":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	}
	return "a " + goKind
}

// partKinds names an API's content part types.
type partKinds struct {
	text  []string // parts whose "text" is the message text
	image string   // the image part
}

type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
	// ImageURL is {"url": ...} in chat completions and a string in
	// responses.
	ImageURL json.RawMessage `json:"image_url"`
	FileID   string          `json:"file_id"`
}

// imageNote stands in for an image of an earlier message: only the new
// message's images are passed to the agent.
const imageNote = "[image]"

// parseContent reads a message's content: a string, null, or an array of
// text and image parts. Images are decoded when withImages (the message
// the turn answers) and noted as text otherwise.
func parseContent(param string, raw json.RawMessage, kinds partKinds, withImages bool) (string, []upload, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", nil, bad(param, "invalid string")
		}
		return s, nil, nil
	case '[':
		var parts []json.RawMessage
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", nil, bad(param, "invalid array")
		}
		var b strings.Builder
		var ups []upload
		addText := func(t string) {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(t)
		}
		for i, pr := range parts {
			pp := fmt.Sprintf("%s[%d]", param, i)
			var part contentPart
			if err := json.Unmarshal(pr, &part); err != nil {
				return "", nil, bad(pp, "want an object with a type")
			}
			switch {
			case slices.Contains(kinds.text, part.Type):
				addText(part.Text)
			case part.Type == kinds.image:
				if !withImages {
					addText(imageNote)
					continue
				}
				url, err := imageURL(pp, part)
				if err != nil {
					return "", nil, err
				}
				up, err := imageFromURL(pp+"."+imageURLField(kinds), url)
				if err != nil {
					return "", nil, err
				}
				ups = append(ups, up)
			default:
				return "", nil, bad(pp+".type", "want %s or %s, got %q", strings.Join(kinds.text, ", "), kinds.image, part.Type)
			}
		}
		return b.String(), ups, nil
	}
	return "", nil, bad(param, "want a string or an array of content parts")
}

func imageURLField(k partKinds) string {
	if k.image == "image_url" {
		return "image_url.url"
	}
	return "image_url"
}

// imageURL reads an image part's URL: {"url": "..."} or "...".
func imageURL(param string, p contentPart) (string, error) {
	raw := bytes.TrimSpace(p.ImageURL)
	if len(raw) == 0 || string(raw) == "null" {
		if p.FileID != "" {
			return "", bad(param+".file_id", "uploaded file ids are not supported; send the image as a data URL or a multipart file")
		}
		return "", bad(param+".image_url", "required")
	}
	var s string
	if raw[0] == '{' {
		var o struct {
			URL string `json:"url"`
		}
		if err := json.Unmarshal(raw, &o); err != nil {
			return "", bad(param+".image_url", "want an object with url")
		}
		s = o.URL
	} else if err := json.Unmarshal(raw, &s); err != nil {
		return "", bad(param+".image_url", "want a string")
	}
	if s == "" {
		return "", bad(param+".image_url", "required")
	}
	return s, nil
}

// admitTurn checks what every turn-running request needs before its body
// is acted on: a known model (returned, resolved) and a configured
// provider.
func (c *Channel) admitTurn(w http.ResponseWriter, model string) (string, bool) {
	if !c.knownModel(model) {
		writeParamError(w, http.StatusNotFound, "invalid_request_error", "model_not_found", "model", fmt.Sprintf("model %q does not exist (this gateway serves %q; omit model or use %q)", model, c.cfg.Model, c.cfg.Model))
		return "", false
	}
	if c.cfg.Unconfigured != "" {
		writeError(w, http.StatusServiceUnavailable, "service_unavailable", "provider_not_configured", c.cfg.Unconfigured)
		return "", false
	}
	if model == "" {
		model = c.cfg.Model
	}
	return model, true
}

// submit takes a turn slot (429 when none frees in time), saves the
// uploads as m's media, registers m's waiter and delivers m to the agent. It answers the client itself when it fails (false); on
// success the caller unregisters m.ChatID when done.
func (c *Channel) submit(w http.ResponseWriter, r *http.Request, m *bus.Inbound, ups []upload) (*waiter, bool) {
	inbox := c.awaitInbox(r.Context())
	if inbox == nil {
		writeError(w, http.StatusServiceUnavailable, "server_error", "unavailable", "the gateway is starting or stopping; try again")
		return nil, false
	}
	release, ok := c.admitSlot(w, r)
	if !ok {
		return nil, false
	}
	media, err := c.save(m.ChatID, ups)
	if err != nil {
		release()
		c.log.Warn("saving an upload failed", "err", err)
		writeError(w, http.StatusServiceUnavailable, "server_error", "unavailable", "the gateway could not store the uploaded files; try again later")
		return nil, false
	}
	m.Media = media
	wt := c.register(m.ChatID, release)
	if err := inbox.Deliver(r.Context(), *m); err != nil {
		c.unregister(m.ChatID)
		if r.Context().Err() != nil {
			return nil, false
		}
		c.log.Warn("request not accepted", "err", err)
		msg := "the gateway could not take the request; try again"
		if errors.Is(err, channels.ErrUnavailable) {
			msg = "the gateway cannot store messages right now (its inbox: the disk, or NATS in cluster mode, is failing or out of reach); try again later"
		}
		writeError(w, http.StatusServiceUnavailable, "server_error", "unavailable", msg)
		return nil, false
	}
	return wt, true
}
