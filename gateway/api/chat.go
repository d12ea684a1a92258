package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/bus"
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

func (c *Channel) model(w http.ResponseWriter, id string) {
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

// sessionIDChars and the length limit in validSessionID keep session ids
// usable as file names and keys. The limit is not in the pattern: a
// bounded repeat compiles to a copy of the class per position (1,880
// allocations and 137 KB held from start-up for {1,128}).
var sessionIDChars = regexp.MustCompile(`^[A-Za-z0-9._:-]+$`)

// validSessionID reports whether id is 1 to 128 letters, digits or . _ : -.
func validSessionID(id string) bool { return len(id) <= 128 && sessionIDChars.MatchString(id) }

// chatParts are the content parts of chat completion messages.
var chatParts = partKinds{text: []string{"text"}, image: "image_url"}

// parseChat reads and checks a chat completion request (JSON, or a
// multipart form with files); it returns the conversation and the last
// user message's uploads.
func (c *Channel) parseChat(w http.ResponseWriter, r *http.Request) (*chatRequest, []bus.Turn, []upload, error) {
	if isMultipart(r) {
		return c.parseChatForm(w, r)
	}
	var req chatRequest
	if err := c.decodeJSON(w, r, &req); err != nil {
		return nil, nil, nil, err
	}
	if len(req.Messages) == 0 {
		return nil, nil, nil, bad("messages", "required: a non-empty array of messages ending with a user message")
	}
	turns := make([]bus.Turn, 0, len(req.Messages))
	var ups []upload
	for i, m := range req.Messages {
		p := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		case "":
			return nil, nil, nil, bad(p+".role", "required")
		default:
			return nil, nil, nil, bad(p+".role", "want system, developer, user, assistant or tool, got %q", m.Role)
		}
		last := i == len(req.Messages)-1
		text, images, err := parseContent(p+".content", m.Content, chatParts, last)
		if err != nil {
			return nil, nil, nil, err
		}
		if last {
			ups = images
		}
		turns = append(turns, bus.Turn{Role: m.Role, Content: text})
	}
	last := turns[len(turns)-1]
	if last.Role != "user" {
		return nil, nil, nil, bad(fmt.Sprintf("messages[%d].role", len(turns)-1), "the last message must be from the user, got %q", last.Role)
	}
	if strings.TrimSpace(last.Content) == "" && len(ups) == 0 {
		return nil, nil, nil, bad(fmt.Sprintf("messages[%d].content", len(turns)-1), "must not be empty")
	}
	if err := c.checkSession(r, &req.SessionID); err != nil {
		return nil, nil, nil, err
	}
	return &req, turns, ups, nil
}

// parseChatForm reads a multipart chat request: message, files, session_id,
// model, stream.
func (c *Channel) parseChatForm(w http.ResponseWriter, r *http.Request) (*chatRequest, []bus.Turn, []upload, error) {
	f, err := c.readForm(w, r)
	if err != nil {
		return nil, nil, nil, err
	}
	req := chatRequest{Model: f.fields["model"], SessionID: f.fields["session_id"]}
	stream, err := f.boolField("stream")
	if err != nil {
		return nil, nil, nil, err
	}
	req.Stream = stream != nil && *stream
	text := f.fields["message"]
	if strings.TrimSpace(text) == "" && len(f.files) == 0 {
		return nil, nil, nil, bad("message", "required: the message text (or at least one file in files)")
	}
	if err := c.checkSession(r, &req.SessionID); err != nil {
		return nil, nil, nil, err
	}
	return &req, []bus.Turn{{Role: "user", Content: text}}, f.files, nil
}

// checkSession takes the session id from the X-Session-Id header when the
// body has none, and checks it.
func (c *Channel) checkSession(r *http.Request, id *string) error {
	if *id == "" {
		*id = r.Header.Get("X-Session-Id")
	}
	if *id != "" && !validSessionID(*id) {
		return bad("session_id", "want 1 to 128 letters, digits or . _ : -")
	}
	return nil
}

func (c *Channel) chatCompletions(w http.ResponseWriter, r *http.Request, who caller) {
	req, turns, ups, err := c.parseChat(w, r)
	if err != nil {
		writeRequestError(w, err)
		return
	}
	model, ok := c.admitTurn(w, req.Model)
	if !ok {
		return
	}
	chatID := "req-" + newID()
	m := bus.Inbound{
		Channel: Name, ChatID: chatID, SenderID: Name, Source: bus.SourceAPI,
		Content: turns[len(turns)-1].Content, MessageID: chatID, ReceivedAt: time.Now(),
	}
	if req.SessionID != "" {
		m.SessionKey = who.sessionKey(req.SessionID)
	} else {
		m.Ephemeral, m.History = true, turns[:len(turns)-1]
	}
	wt, ok := c.submit(w, r, &m, ups)
	if !ok {
		return
	}
	defer c.unregister(chatID)
	resp := completion{id: "chatcmpl-" + chatID[len("req-"):], model: model, created: time.Now().Unix()}
	var finished bool
	if req.Stream {
		finished = c.stream(w, r, wt, resp, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
	} else {
		finished = whole(w, r, wt, func(a answer) any { return completionBody(resp, a) })
	}
	if !finished {
		c.stop(m)
	}
}

// stop cancels the turn of a request whose client went away: a Stop for
// its session, which the agent handles ahead of its queue, like /stop. It goes through
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
		SessionKey: m.SessionKey, Stop: true, MessageID: m.MessageID + "/stop", ReceivedAt: time.Now()}
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
	PromptTokens            int            `json:"prompt_tokens"`
	CompletionTokens        int            `json:"completion_tokens"`
	TotalTokens             int            `json:"total_tokens"`
	PromptTokensDetails     map[string]int `json:"prompt_tokens_details"`
	CompletionTokensDetails map[string]int `json:"completion_tokens_details"`
}

func usageOf(u *bus.Usage) usageObject {
	if u == nil {
		u = &bus.Usage{}
	}
	return usageObject{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens,
		PromptTokensDetails:     map[string]int{"cached_tokens": u.CachedTokens},
		CompletionTokensDetails: map[string]int{"reasoning_tokens": u.ReasoningTokens}}
}

// completionBody is the chat.completion of a finished answer.
func completionBody(resp completion, a answer) any {
	return map[string]any{
		"id": resp.id, "object": "chat.completion", "created": resp.created, "model": resp.model,
		"choices": []any{map[string]any{
			"index": 0, "message": map[string]any{"role": "assistant", "content": a.text},
			"finish_reason": "stop", "logprobs": nil,
		}},
		"usage": usageOf(a.usage),
	}
}

// stream writes the answer as server-sent chat.completion.chunk events as
// it grows; false if the client went away first.
func (c *Channel) stream(w http.ResponseWriter, r *http.Request, wt *waiter, resp completion, includeUsage bool) bool {
	rc := startEvents(w)
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
	// A failed turn's error text ends the answer.
	a, _, ok := wt.follow(r.Context(), true, func(delta string) error {
		return chunk(map[string]any{"content": delta}, nil)
	})
	if !ok || chunk(map[string]any{}, "stop") != nil {
		return false
	}
	if includeUsage {
		obj := map[string]any{"id": resp.id, "object": "chat.completion.chunk", "created": resp.created,
			"model": resp.model, "choices": []any{}, "usage": usageOf(a.usage)}
		if writeEvent(w, rc, obj) != nil {
			return false
		}
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	_ = rc.Flush()
	return true
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
