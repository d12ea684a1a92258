package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/gateway/bus"
)

type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (c *Channel) modelList() []modelObject {
	return []modelObject{{ID: c.cfg.Model, Object: "model", OwnedBy: "nanobot"}}
}

func (c *Channel) models(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": c.modelList()})
}

func (c *Channel) model(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !c.knownModel(id) || id == "" {
		writeParamError(w, http.StatusNotFound, "invalid_request_error", "model_not_found", "model", fmt.Sprintf("model %q does not exist (this gateway serves %q)", id, c.cfg.Model))
		return
	}
	m := c.modelList()[0]
	m.ID = id
	writeJSON(w, http.StatusOK, m)
}

func (c *Channel) knownModel(id string) bool {
	return id == "" || id == c.cfg.Model || id == AliasModel
}

// chatRequest is the part of a chat completion request the gateway reads;
// other fields (temperature, tools, ...) are accepted and ignored: the
// agent's own settings and tools apply.
type chatRequest struct {
	Model         string          `json:"model"`
	Messages      []chatMessage   `json:"messages"`
	Stream        bool            `json:"stream"`
	StreamOptions *streamOptions  `json:"stream_options"`
	SessionID     string          `json:"session_id"`
	User          json.RawMessage `json:"user"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// sessionIDPattern keeps session ids usable as file names and keys.
var sessionIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// badRequest is a 400 naming the field at fault.
type badRequest struct{ param, msg string }

func (e *badRequest) Error() string { return e.msg }

func bad(param, format string, args ...any) *badRequest {
	return &badRequest{param: param, msg: param + ": " + fmt.Sprintf(format, args...)}
}

// parseChat reads and checks a chat completion request.
func (c *Channel) parseChat(w http.ResponseWriter, r *http.Request) (*chatRequest, []bus.Turn, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return nil, nil, &badRequest{param: "", msg: "Content-Type must be application/json"}
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, c.cfg.MaxBodyBytes))
	if err != nil {
		return nil, nil, err
	}
	var req chatRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := te.Field
			if field == "" {
				return nil, nil, &badRequest{msg: "the request body must be a JSON object"}
			}
			return nil, nil, bad(field, "want %s, got %s", jsonKind(te.Type.Kind().String()), te.Value)
		}
		return nil, nil, &badRequest{msg: "invalid JSON in request body: " + err.Error()}
	}
	if len(req.Messages) == 0 {
		return nil, nil, bad("messages", "required: a non-empty array of messages ending with a user message")
	}
	turns := make([]bus.Turn, 0, len(req.Messages))
	for i, m := range req.Messages {
		p := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		case "":
			return nil, nil, bad(p+".role", "required")
		default:
			return nil, nil, bad(p+".role", "want system, developer, user, assistant or tool, got %q", m.Role)
		}
		text, err := messageText(p+".content", m.Content)
		if err != nil {
			return nil, nil, err
		}
		turns = append(turns, bus.Turn{Role: m.Role, Content: text})
	}
	last := turns[len(turns)-1]
	if last.Role != "user" {
		return nil, nil, bad(fmt.Sprintf("messages[%d].role", len(turns)-1), "the last message must be from the user, got %q", last.Role)
	}
	if strings.TrimSpace(last.Content) == "" {
		return nil, nil, bad(fmt.Sprintf("messages[%d].content", len(turns)-1), "must not be empty")
	}
	if req.SessionID == "" {
		req.SessionID = r.Header.Get("X-Session-Id")
	}
	if req.SessionID != "" && !sessionIDPattern.MatchString(req.SessionID) {
		return nil, nil, bad("session_id", "want 1 to 128 letters, digits or . _ : -")
	}
	return &req, turns, nil
}

// messageText reads a message's content: a string, null, or an array of
// text parts.
func messageText(param string, raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", bad(param, "invalid string")
		}
		return s, nil
	case '[':
		var parts []json.RawMessage
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", bad(param, "invalid array")
		}
		var b strings.Builder
		for i, pr := range parts {
			var part contentPart
			if err := json.Unmarshal(pr, &part); err != nil {
				return "", bad(fmt.Sprintf("%s[%d]", param, i), "want an object with type and text")
			}
			if part.Type != "text" {
				return "", bad(fmt.Sprintf("%s[%d].type", param, i), "only text parts are supported, got %q", part.Type)
			}
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(part.Text)
		}
		return b.String(), nil
	}
	return "", bad(param, "want a string or an array of text parts")
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

func (c *Channel) chatCompletions(w http.ResponseWriter, r *http.Request) {
	req, turns, err := c.parseChat(w, r)
	if err != nil {
		var br *badRequest
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &br):
			writeParamError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request", br.param, br.msg)
		case errors.As(err, &tooBig):
			writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", fmt.Sprintf("request body is larger than %d bytes (api.maxBodyBytes)", tooBig.Limit))
		default:
			writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request", "could not read the request body")
		}
		return
	}
	if !c.knownModel(req.Model) {
		writeParamError(w, http.StatusNotFound, "invalid_request_error", "model_not_found", "model", fmt.Sprintf("model %q does not exist (this gateway serves %q; omit model or use %q)", req.Model, c.cfg.Model, c.cfg.Model))
		return
	}
	model := req.Model
	if model == "" {
		model = c.cfg.Model
	}
	inbox := c.awaitInbox(r.Context())
	if inbox == nil {
		writeError(w, http.StatusServiceUnavailable, "server_error", "unavailable", "the gateway is starting or stopping; try again")
		return
	}

	chatID := "req-" + newID()
	m := bus.Inbound{
		Channel: Name, ChatID: chatID, SenderID: Name, Source: bus.SourceAPI,
		Content: turns[len(turns)-1].Content, MessageID: chatID, ReceivedAt: time.Now(),
	}
	if req.SessionID != "" {
		m.SessionKey = Name + ":" + req.SessionID
	} else {
		m.Ephemeral, m.History = true, turns[:len(turns)-1]
	}
	wt := c.register(chatID)
	defer c.unregister(chatID)
	if err := inbox.Deliver(r.Context(), m); err != nil {
		if r.Context().Err() != nil {
			return
		}
		c.log.Warn("request not accepted", "err", err)
		msg := "the gateway could not take the request; try again"
		if errors.Is(err, channels.ErrUnavailable) {
			msg = "the gateway cannot store messages right now (disk full or failing); try again later"
		}
		writeError(w, http.StatusServiceUnavailable, "server_error", "unavailable", msg)
		return
	}
	resp := completion{id: "chatcmpl-" + chatID[len("req-"):], model: model, created: time.Now().Unix()}
	var finished bool
	if req.Stream {
		finished = c.stream(w, r, wt, resp, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
	} else {
		finished = c.whole(w, r, wt, resp)
	}
	if !finished {
		c.stop(m)
	}
}

// stop cancels the turn of a request whose client went away: a /stop for
// its session, which the agent handles ahead of its queue. It goes through
// the inbox, so it reaches the agent wherever it runs (also on a cluster
// worker). In a named session it also stops what other requests of that
// session have queued, as /stop does in a chat.
func (c *Channel) stop(m bus.Inbound) {
	inbox := c.currentInbox()
	if inbox == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.StopTimeout)
	defer cancel()
	s := bus.Inbound{Channel: Name, ChatID: m.ChatID, SenderID: Name, Source: bus.SourceAPI,
		SessionKey: m.SessionKey, Content: "/stop", MessageID: m.MessageID + "/stop", ReceivedAt: time.Now()}
	if err := inbox.Deliver(ctx, s); err != nil {
		c.log.Warn("stopping the turn of a disconnected client failed", "err", err)
	}
}

// completion is what every response object repeats.
type completion struct {
	id      string
	model   string
	created int64
}

type usageObject struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func usageOf(u *bus.Usage) usageObject {
	if u == nil {
		return usageObject{}
	}
	return usageObject{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
}

// whole waits for the answer and writes one chat.completion; false if the
// client went away first.
func (c *Channel) whole(w http.ResponseWriter, r *http.Request, wt *waiter, resp completion) bool {
	for {
		select {
		case <-r.Context().Done():
			return false
		case <-wt.wake:
		}
		text, done, failed, usage := wt.answer()
		if !done {
			continue
		}
		if failed {
			writeError(w, http.StatusBadGateway, "server_error", "upstream_error", text)
			return true
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": resp.id, "object": "chat.completion", "created": resp.created, "model": resp.model,
			"choices": []any{map[string]any{
				"index": 0, "message": map[string]any{"role": "assistant", "content": text},
				"finish_reason": "stop", "logprobs": nil,
			}},
			"usage": usageOf(usage),
		})
		return true
	}
}

// stream writes the answer as server-sent chat.completion.chunk events as
// it grows; false if the client went away first.
func (c *Channel) stream(w http.ResponseWriter, r *http.Request, wt *waiter, resp completion, includeUsage bool) bool {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	chunk := func(delta map[string]any, finish any) error {
		obj := map[string]any{
			"id": resp.id, "object": "chat.completion.chunk", "created": resp.created, "model": resp.model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
		return writeEvent(w, rc, obj)
	}
	if chunk(map[string]any{"role": "assistant", "content": ""}, nil) != nil {
		return false
	}
	sent := ""
	for {
		select {
		case <-r.Context().Done():
			return false
		case <-wt.wake:
		}
		text, done, _, usage := wt.answer()
		// The text only grows; if a message was rewritten (its final text
		// differs from what streamed), what was sent stands.
		if strings.HasPrefix(text, sent) && len(text) > len(sent) {
			if chunk(map[string]any{"content": text[len(sent):]}, nil) != nil {
				return false
			}
			sent = text
		}
		if !done {
			continue
		}
		if chunk(map[string]any{}, "stop") != nil {
			return false
		}
		if includeUsage {
			u := usageOf(usage)
			obj := map[string]any{"id": resp.id, "object": "chat.completion.chunk", "created": resp.created,
				"model": resp.model, "choices": []any{}, "usage": u}
			if writeEvent(w, rc, obj) != nil {
				return false
			}
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
		_ = rc.Flush()
		return true
	}
}

func writeEvent(w io.Writer, rc *http.ResponseController, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
		return err
	}
	return rc.Flush()
}
