package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/bus"
)

// responsesRequest is the part of a /v1/responses request the gateway
// reads; other fields (tools, temperature, reasoning, ...) are accepted and
// ignored: the agent's own settings and tools apply.
type responsesRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       *string         `json:"instructions"`
	Stream             bool            `json:"stream"`
	Store              *bool           `json:"store"`
	PreviousResponseID *string         `json:"previous_response_id"`
}

// inputItem is one item of input; only messages are supported.
type inputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

var responseParts = partKinds{text: []string{"input_text", "output_text"}, image: "input_image"}

// responseTurn is a checked /v1/responses request.
type responseTurn struct {
	model    string
	stream   bool
	store    bool
	previous string  // the previous response's id, if any
	instr    *string // instructions, echoed in the response
	root     string  // its conversation's root
	history  []bus.Turn
	text     string
	uploads  []upload
}

// parseResponses reads and checks a /v1/responses request (JSON, or a
// multipart form with files).
func (c *Channel) parseResponses(w http.ResponseWriter, r *http.Request, who caller) (*responseTurn, error) {
	var req responsesRequest
	var t responseTurn
	if isMultipart(r) {
		f, err := c.readForm(w, r)
		if err != nil {
			return nil, err
		}
		stream, err := f.boolField("stream")
		if err != nil {
			return nil, err
		}
		store, err := f.boolField("store")
		if err != nil {
			return nil, err
		}
		req.Model, req.Store, req.Stream = f.fields["model"], store, stream != nil && *stream
		if v, ok := f.fields["instructions"]; ok {
			req.Instructions = &v
		}
		if v, ok := f.fields["previous_response_id"]; ok && v != "" {
			req.PreviousResponseID = &v
		}
		t.text, t.uploads = f.fields["message"], f.files
		if strings.TrimSpace(t.text) == "" && len(t.uploads) == 0 {
			return nil, bad("message", "required: the message text (or at least one file in files)")
		}
	} else {
		if err := c.decodeJSON(w, r, &req); err != nil {
			return nil, err
		}
		if err := t.readInput(req.Input); err != nil {
			return nil, err
		}
	}
	t.model, t.stream = req.Model, req.Stream
	t.store = req.Store == nil || *req.Store
	t.instr = req.Instructions
	if req.Instructions != nil && strings.TrimSpace(*req.Instructions) != "" {
		t.history = append([]bus.Turn{{Role: "system", Content: *req.Instructions}}, t.history...)
	}
	if req.PreviousResponseID != nil {
		t.previous = *req.PreviousResponseID
	}
	return &t, c.placeResponse(&t, who)
}

// readInput reads input: a string (one user message) or an array of
// message items whose last is the user's.
func (t *responseTurn) readInput(raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return bad("input", "required: a string or an array of message items ending with a user message")
	}
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &t.text); err != nil {
			return bad("input", "invalid string")
		}
		if strings.TrimSpace(t.text) == "" {
			return bad("input", "must not be empty")
		}
		return nil
	}
	if raw[0] != '[' {
		return bad("input", "want a string or an array of message items")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return bad("input", "invalid array")
	}
	if len(items) == 0 {
		return bad("input", "must not be empty")
	}
	for i, ir := range items {
		p := fmt.Sprintf("input[%d]", i)
		var it inputItem
		if err := json.Unmarshal(ir, &it); err != nil {
			return bad(p, "want a message item: an object with role and content")
		}
		if it.Type != "" && it.Type != "message" {
			return bad(p+".type", "only message items are supported, got %q", it.Type)
		}
		switch it.Role {
		case "user", "assistant", "system", "developer":
		case "":
			return bad(p+".role", "required")
		default:
			return bad(p+".role", "want user, assistant, system or developer, got %q", it.Role)
		}
		last := i == len(items)-1
		text, ups, err := parseContent(p+".content", it.Content, responseParts, last)
		if err != nil {
			return err
		}
		if !last {
			t.history = append(t.history, bus.Turn{Role: it.Role, Content: text})
			continue
		}
		if it.Role != "user" {
			return bad(p+".role", "the last item must be the user's message, got %q", it.Role)
		}
		if strings.TrimSpace(text) == "" && len(ups) == 0 {
			return bad(p+".content", "must not be empty")
		}
		t.text, t.uploads = text, ups
	}
	return nil
}

// placeResponse decides where the turn runs: a stored conversation (new,
// or the previous response's) or, with store:false, nowhere.
func (c *Channel) placeResponse(t *responseTurn, who caller) error {
	// System items and instructions are the turn's instructions; what is
	// left is the conversation the request supplies.
	var instr []string
	var convo []bus.Turn
	for _, h := range t.history {
		if h.Role == "system" || h.Role == "developer" {
			if strings.TrimSpace(h.Content) != "" {
				instr = append(instr, h.Content)
			}
			continue
		}
		convo = append(convo, h)
	}
	t.history = convo
	if len(instr) > 0 {
		// The agent's system prompt stays as it is (it is the prompt cache's
		// prefix); the request's instructions lead its message instead.
		t.text = "Instructions for this reply:\n" + strings.Join(instr, "\n\n") + "\n\n" + t.text
	}
	if t.previous == "" {
		if t.store && len(t.history) > 0 {
			return bad("input", "a stored response starts from one user message; send earlier turns with store:false, or continue a conversation with previous_response_id")
		}
		return nil
	}
	if !t.store {
		return bad("store", "store:false cannot continue a stored conversation (previous_response_id): its turn would be stored")
	}
	if len(t.history) > 0 {
		return bad("input", "with previous_response_id the input is the new user message only (the conversation is on the server)")
	}
	root, ok := rootOf(t.previous)
	known := false
	if ok {
		var err error
		if known, err = c.convs.has(root, who.ns); err != nil {
			return &storeError{err}
		}
	}
	if !known {
		return &notFound{param: "previous_response_id", code: "previous_response_not_found",
			msg: fmt.Sprintf("Previous response with id '%s' not found (unknown, or made with store:false).", t.previous)}
	}
	t.root = root
	return nil
}

func (c *Channel) responses(w http.ResponseWriter, r *http.Request, who caller) {
	t, err := c.parseResponses(w, r, who)
	if err != nil {
		var se *storeError
		if errors.As(err, &se) {
			c.log.Error("reading the stored conversations failed", "err", se.err)
			writeError(w, http.StatusServiceUnavailable, "server_error", "unavailable", "the gateway cannot read its stored conversations; try again later")
			return
		}
		writeRequestError(w, err)
		return
	}
	model, ok := c.admitTurn(w, t.model)
	if !ok {
		return
	}
	own := newID()
	id := "resp_" + own
	chatID := "req-" + own
	m := bus.Inbound{
		Channel: Name, ChatID: chatID, SenderID: Name, Source: bus.SourceAPI,
		Content: t.text, MessageID: chatID, ReceivedAt: time.Now(),
	}
	switch {
	case !t.store:
		m.Ephemeral, m.History = true, t.history
	case t.root != "":
		id = "resp_" + t.root + own
		m.SessionKey = who.sessionKey("resp-" + t.root)
	default:
		if err := c.convs.add(own, who.ns, m.ReceivedAt); err != nil {
			c.log.Error("recording a new conversation failed", "err", err)
			writeError(w, http.StatusServiceUnavailable, "server_error", "unavailable", "the gateway cannot store the conversation right now (disk full or failing); try again later, or send store:false")
			return
		}
		m.SessionKey = who.sessionKey("resp-" + own)
	}
	wt, ok := c.submit(w, r, &m, t.uploads)
	if !ok {
		return
	}
	defer c.unregister(chatID)
	resp := &responseObject{ID: id, Object: "response", CreatedAt: m.ReceivedAt.Unix(), Status: "in_progress",
		Model: model, Output: []outputMessage{}, Store: t.store, ToolChoice: "auto", Tools: []any{},
		Metadata: map[string]string{}, Text: map[string]any{"format": map[string]string{"type": "text"}}}
	if t.previous != "" {
		resp.PreviousResponseID = &t.previous
	}
	if t.instr != nil {
		resp.Instructions = *t.instr
	}
	var finished bool
	if t.stream {
		finished = c.streamResponse(w, r, wt, resp, "msg_"+own)
	} else {
		finished = whole(w, r, wt, func(a answer) any {
			resp.complete("msg_"+own, a.text, a.usage)
			return resp
		})
	}
	if !finished {
		c.stop(m)
	}
}

// storeError is a failure to read the record of stored conversations:
// the gateway's fault, not the request's.
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// responseObject is OpenAI's "response".
type responseObject struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"`
	Model              string            `json:"model"`
	Output             []outputMessage   `json:"output"`
	Usage              *responseUsage    `json:"usage"`
	Error              *responseError    `json:"error"`
	IncompleteDetails  any               `json:"incomplete_details"`
	Instructions       any               `json:"instructions"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Store              bool              `json:"store"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	ToolChoice         string            `json:"tool_choice"`
	Tools              []any             `json:"tools"`
	Metadata           map[string]string `json:"metadata"`
	Text               map[string]any    `json:"text"`
}

type outputMessage struct {
	Type    string       `json:"type"`
	ID      string       `json:"id"`
	Status  string       `json:"status"`
	Role    string       `json:"role"`
	Content []outputText `json:"content"`
}

type outputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

type responseUsage struct {
	InputTokens         int            `json:"input_tokens"`
	InputTokensDetails  map[string]int `json:"input_tokens_details"`
	OutputTokens        int            `json:"output_tokens"`
	OutputTokensDetails map[string]int `json:"output_tokens_details"`
	TotalTokens         int            `json:"total_tokens"`
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func responseUsageOf(u *bus.Usage) *responseUsage {
	if u == nil {
		u = &bus.Usage{}
	}
	return &responseUsage{
		InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens,
		InputTokensDetails:  map[string]int{"cached_tokens": u.CachedTokens},
		OutputTokensDetails: map[string]int{"reasoning_tokens": u.ReasoningTokens},
	}
}

func message(id, status, text string, parts bool) outputMessage {
	m := outputMessage{Type: "message", ID: id, Status: status, Role: "assistant", Content: []outputText{}}
	if parts {
		m.Content = append(m.Content, textPart(text))
	}
	return m
}

func textPart(text string) outputText {
	return outputText{Type: "output_text", Text: text, Annotations: []any{}, Logprobs: []any{}}
}

// complete fills resp in as finished with text and usage.
func (resp *responseObject) complete(msgID, text string, usage *bus.Usage) {
	resp.Status = "completed"
	resp.Output = []outputMessage{message(msgID, "completed", text, true)}
	resp.Usage = responseUsageOf(usage)
}

// streamResponse writes the answer as the documented sequence of
// server-sent events (response.created ... response.completed), each
// numbered; false if the client went away first.
func (c *Channel) streamResponse(w http.ResponseWriter, r *http.Request, wt *waiter, resp *responseObject, msgID string) bool {
	rc := startEvents(w)
	seq := 0
	emit := func(typ string, fields map[string]any) error {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		b, err := json.Marshal(fields)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b); err != nil {
			return err
		}
		return rc.Flush()
	}
	at := func(fields map[string]any) map[string]any {
		fields["item_id"], fields["output_index"], fields["content_index"] = msgID, 0, 0
		return fields
	}
	if emit("response.created", map[string]any{"response": resp}) != nil ||
		emit("response.in_progress", map[string]any{"response": resp}) != nil ||
		emit("response.output_item.added", map[string]any{"output_index": 0, "item": message(msgID, "in_progress", "", false)}) != nil ||
		emit("response.content_part.added", at(map[string]any{"part": textPart("")})) != nil {
		return false
	}
	// A failed turn's error text is the response's error, not its text.
	a, sent, ok := wt.follow(r.Context(), false, func(delta string) error {
		return emit("response.output_text.delta", at(map[string]any{"delta": delta, "logprobs": []any{}}))
	})
	if !ok {
		return false
	}
	if a.failed {
		resp.Status = "failed"
		resp.Error = &responseError{Code: "server_error", Message: a.text}
		resp.Usage = responseUsageOf(a.usage)
		return emit("response.failed", map[string]any{"response": resp}) == nil
	}
	resp.complete(msgID, sent, a.usage)
	return emit("response.output_text.done", at(map[string]any{"text": sent, "logprobs": []any{}})) == nil &&
		emit("response.content_part.done", at(map[string]any{"part": textPart(sent)})) == nil &&
		emit("response.output_item.done", map[string]any{"output_index": 0, "item": resp.Output[0]}) == nil &&
		emit("response.completed", map[string]any{"response": resp}) == nil
}
