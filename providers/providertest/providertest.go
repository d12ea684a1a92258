// Package providertest is a scripted local LLM server for tests. One Server
// speaks both wire formats nanobot's backends use, each as JSON and as a
// server-sent-event stream:
//
//   - OpenAI chat completions: POST {URL}/v1/chat/completions (also the Azure
//     path /openai/deployments/{name}/chat/completions); stream chunks are
//     "data: {...}" lines ending with "data: [DONE]";
//   - Anthropic messages: POST {URL}/v1/messages; the stream is
//     message_start, content_block_start/delta/stop for thinking (with a
//     signature_delta), text and tool_use (input_json_delta) blocks,
//     message_delta with usage, message_stop;
//   - OpenAI embeddings: POST {URL}/v1/embeddings, answered by the server
//     itself with a deterministic Vector per input (not from the script);
//   - OpenAI Responses: POST {URL}/v1/responses; the stream is named events
//     response.created, response.output_item.added/done around
//     reasoning_summary_text, output_text and function_call_arguments
//     deltas, and response.completed with usage (reasoning and cached
//     tokens);
//   - a model catalog: GET {URL}/v1/models answers what SetModels set
//     (recorded with Format Models; without SetModels it fails the test).
//
// The script is a queue of Replies (Push), consumed one per request, and
// optionally a function choosing the reply from the request (Handle), used
// when the queue is empty. Every request is recorded, decoded, with its
// headers (Requests), so a test can assert on exactly what a client sent.
//
// Streams are split the way real servers split them: text in several
// deltas, tool-call arguments in several fragments. Faults are per reply:
// an error status with body and Retry-After, a delay before the headers or
// before the first byte, a pause between stream events, a stall after N events (idle timeouts), a dropped
// connection after N events; SetLatency adds a fixed latency to every reply.
//
// Typical use:
//
//	srv := providertest.New(t)
//	srv.Push(providertest.Reply{Text: "hi"})
//	p, _ := openai.New(openai.Options{Endpoint: providers.Endpoint{APIBase: srv.OpenAIBase()}})
//	resp, err := p.Chat(ctx, req)
//	got := srv.Requests()[0].Body["model"]
//
// All methods are safe for concurrent use. New registers t.Cleanup to shut
// the server down; stalled handlers are released first.
package providertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Format is the wire format of a request.
type Format string

// Wire formats.
const (
	OpenAI    Format = "openai"
	Anthropic Format = "anthropic"
	Responses Format = "responses"
	// Models is a GET of the model catalog (SetModels).
	Models Format = "models"
)

// Reply scripts one response. The zero Reply is an empty answer.
type Reply struct {
	// Text is the assistant's answer.
	Text string
	// ToolCalls are the calls the model asks for.
	ToolCalls []ToolCall
	// Reasoning is DeepSeek-style reasoning_content (OpenAI format), or the
	// reasoning summary text (Responses format).
	Reasoning string
	// Encrypted is the encrypted_content of the reasoning item (Responses
	// format only).
	Encrypted string
	// Thinking are Anthropic thinking blocks, sent before the text
	// (Anthropic format only).
	Thinking []Thinking
	// Usage is reported as given; nil reports 10 prompt and 5 completion tokens.
	Usage *Usage
	// NoUsage reports no usage at all, as some OpenAI-compatible servers
	// do (no usage object, no usage chunk).
	NoUsage bool
	// FinishReason in OpenAI terms (stop, tool_calls, length,
	// content_filter); mapped for Anthropic. Empty: tool_calls when there are
	// calls, else stop.
	FinishReason string
	// Model is echoed back; empty echoes the request's model.
	Model string

	// Status, when not 0 or 200, fails the request with this status.
	Status int
	// Body is the error body; empty means the format's usual error JSON
	// with a message derived from Status.
	Body string
	// RetryAfter, when set, is sent as the Retry-After header.
	RetryAfter string
	// Header holds extra response headers.
	Header map[string]string

	// Delay waits before the response headers (slow server).
	Delay time.Duration
	// FirstByteDelay waits after the headers, before the first body byte.
	FirstByteDelay time.Duration
	// EventDelay waits before each stream event after the first (a slow
	// but live stream).
	EventDelay time.Duration
	// StallAfter, when > 0, stops a stream after that many events and holds
	// the connection open until the client leaves.
	StallAfter int
	// DropAfter, when > 0, closes the connection abruptly after that many
	// stream events.
	DropAfter int
	// ErrorAfter, when > 0, replaces the rest of a stream after that many
	// events with an in-band error event (HTTP status stays 200), as
	// vendors do when they fail mid-answer. ErrorEvent is its JSON; empty
	// means an overloaded error in the request's format.
	ErrorAfter int
	ErrorEvent string
	// Chunks is how many pieces text and tool arguments are split into
	// (at most one per character); 0 means 3.
	Chunks int
}

// ToolCall is one scripted tool call. Arguments is the raw JSON text the
// model "produces"; it may be deliberately broken.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Thinking is one Anthropic thinking block; with Redacted set it is a
// redacted_thinking block carrying that data instead.
type Thinking struct {
	Text      string
	Signature string
	Redacted  string
}

// Usage is the token accounting to report.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	CacheReadTokens  int
	CacheWriteTokens int
	// ReasoningTokens is sent as completion_tokens_details.reasoning_tokens
	// (OpenAI format only).
	ReasoningTokens int
}

// Request is one recorded request.
type Request struct {
	Format Format
	Method string
	Path   string
	Query  string
	Header http.Header
	// Raw is the body as received; Body is it decoded.
	Raw  []byte
	Body map[string]any
	// Stream and Model are read from the body.
	Stream bool
	Model  string
}

// Messages returns the request's "messages" array.
func (r Request) Messages() []map[string]any {
	raw, _ := r.Body["messages"].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, m := range raw {
		if mm, ok := m.(map[string]any); ok {
			out = append(out, mm)
		}
	}
	return out
}

// Input returns the request's "input" array (Responses format).
func (r Request) Input() []map[string]any {
	raw, _ := r.Body["input"].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, m := range raw {
		if mm, ok := m.(map[string]any); ok {
			out = append(out, mm)
		}
	}
	return out
}

// Server is the scripted LLM server.
type Server struct {
	// URL is the server's base URL (http://127.0.0.1:port).
	URL string

	t    testing.TB
	srv  *httptest.Server
	done chan struct{}

	mu       sync.Mutex
	queue    []Reply
	handler  func(Request) Reply
	requests []Request
	latency  time.Duration
	forget   bool // SetRecording(false): keep no requests
	// models is the catalog's answer (SetModels); modelsStatus 0 means
	// no catalog.
	models       string
	modelsStatus int
}

// New starts a server and registers its shutdown with t.Cleanup.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, done: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(func() {
		close(s.done)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
	return s
}

// OpenAIBase is the apiBase for OpenAI-compatible clients (URL + "/v1").
func (s *Server) OpenAIBase() string { return s.URL + "/v1" }

// AnthropicBase is the apiBase for Anthropic clients (URL).
func (s *Server) AnthropicBase() string { return s.URL }

// Client is an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Push queues replies, answered in order, one per request.
func (s *Server) Push(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// Handle sets the function answering requests when the queue is empty.
// It runs on the server's goroutine; it must not call t.FailNow.
func (s *Server) Handle(f func(Request) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = f
}

// SetModels makes GET requests for a path ending in /models answer status
// with body (JSON), independently of the reply queue.
func (s *Server) SetModels(status int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.modelsStatus, s.models = status, body
}

// SetLatency adds d before every reply (on top of Reply.Delay).
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
}

// SetRecording turns the request log on (the default) or off; long load
// runs turn it off so the server's memory stays flat.
func (s *Server) SetRecording(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget = !on
	if !on {
		s.requests = nil
	}
}

// Requests returns a copy of every request received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	copy(out, s.requests)
	return out
}

// Pending is the number of queued replies not yet consumed.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// WaitRequests polls until at least n requests arrived, failing the test
// if that takes longer than timeout, and returns them.
func (s *Server) WaitRequests(n int, timeout time.Duration) []Request {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if reqs := s.Requests(); len(reqs) >= n {
			return reqs
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("providertest: got %d requests, want %d within %s", len(s.Requests()), n, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	req := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Raw: raw}
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
		s.serveModels(w, req)
		return
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "/chat/completions"):
		req.Format = OpenAI
	case strings.HasSuffix(r.URL.Path, "/messages"):
		req.Format = Anthropic
	case strings.HasSuffix(r.URL.Path, "/responses"):
		req.Format = Responses
	case strings.HasSuffix(r.URL.Path, "/embeddings"):
		req.Format = Embeddings
	default:
		s.t.Errorf("providertest: unexpected request %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &req.Body); err != nil {
			s.t.Errorf("providertest: request body is not JSON: %v", err)
		}
	}
	req.Stream, _ = req.Body["stream"].(bool)
	req.Model, _ = req.Body["model"].(string)
	if req.Format == Embeddings {
		s.record(req)
		s.serveEmbeddings(w, req)
		return
	}

	reply, ok, latency := s.next(req)
	if !ok {
		s.t.Errorf("providertest: no reply scripted for %s %s", r.Method, r.URL.Path)
		reply = Reply{Status: http.StatusBadRequest, Body: `{"error":{"message":"providertest: no reply scripted"}}`}
	}
	if reply.Model == "" {
		reply.Model = req.Model
	}
	if !s.pause(r, latency+reply.Delay) {
		return
	}
	for k, v := range reply.Header {
		w.Header().Set(k, v)
	}
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		s.writeError(w, r, req.Format, reply)
		return
	}
	switch {
	case req.Format == Responses && req.Stream:
		s.writeStream(w, r, reply, withErrorEvent(reply, Responses, responsesStream(reply)))
	case req.Format == Responses:
		s.writeJSON(w, r, reply, responsesBody(reply))
	case req.Format == OpenAI && req.Stream:
		s.writeStream(w, r, reply, withErrorEvent(reply, OpenAI, openAIStream(reply)))
	case req.Format == OpenAI:
		s.writeJSON(w, r, reply, openAICompletion(reply))
	case req.Stream:
		s.writeStream(w, r, reply, withErrorEvent(reply, Anthropic, anthropicStream(reply)))
	default:
		s.writeJSON(w, r, reply, anthropicMessage(reply))
	}
}

// serveModels answers a catalog request with what SetModels set.
func (s *Server) serveModels(w http.ResponseWriter, req Request) {
	req.Format = Models
	s.mu.Lock()
	if !s.forget {
		s.requests = append(s.requests, req)
	}
	status, body := s.modelsStatus, s.models
	s.mu.Unlock()
	if status == 0 {
		s.t.Errorf("providertest: a model catalog was asked for (%s) but none was set", req.Path)
		http.Error(w, "providertest: no model catalog set", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// withErrorEvent applies Reply.ErrorAfter.
func withErrorEvent(reply Reply, f Format, events []event) []event {
	if reply.ErrorAfter <= 0 || reply.ErrorAfter > len(events) {
		return events
	}
	events = events[:reply.ErrorAfter]
	data := reply.ErrorEvent
	if f == Responses {
		if data == "" {
			data = mustJSON(map[string]any{"type": "error", "code": "server_error", "message": "providertest: overloaded", "sequence_number": len(events)})
		}
		return append(events, event{name: "error", data: data})
	}
	if f == OpenAI {
		if data == "" {
			data = mustJSON(map[string]any{"error": map[string]any{"message": "providertest: overloaded", "type": "server_error", "code": nil}})
		}
		return append(events, event{data: data})
	}
	if data == "" {
		data = mustJSON(map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": "providertest: overloaded"}})
	}
	return append(events, event{name: "error", data: data})
}

// next records req and picks its reply.
func (s *Server) next(req Request) (Reply, bool, time.Duration) {
	s.mu.Lock()
	if !s.forget {
		s.requests = append(s.requests, req)
	}
	latency := s.latency
	if len(s.queue) > 0 {
		reply := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
		return reply, true, latency
	}
	h := s.handler
	s.mu.Unlock()
	if h == nil {
		return Reply{}, false, latency
	}
	return h(req), true, latency
}

// pause waits d unless the client leaves or the server shuts down; it
// reports whether to go on.
func (s *Server) pause(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	case <-s.done:
		return false
	}
}

func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, reply Reply, body any) {
	b, err := json.Marshal(body)
	if err != nil {
		s.t.Errorf("providertest: encode reply: %v", err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	flush(w)
	if !s.pause(r, reply.FirstByteDelay) {
		return
	}
	_, _ = w.Write(b)
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, f Format, reply Reply) {
	body := reply.Body
	if body == "" {
		msg := fmt.Sprintf("providertest: scripted %d %s", reply.Status, http.StatusText(reply.Status))
		if f == OpenAI || f == Responses {
			body = mustJSON(map[string]any{"error": map[string]any{"message": msg, "type": openAIErrorType(reply.Status), "code": nil}})
		} else {
			body = mustJSON(map[string]any{"type": "error", "error": map[string]any{"type": anthropicErrorType(reply.Status), "message": msg}})
		}
	}
	if json.Valid([]byte(body)) {
		w.Header().Set("Content-Type", "application/json")
	} else {
		w.Header().Set("Content-Type", "text/plain")
	}
	w.WriteHeader(reply.Status)
	if !s.pause(r, reply.FirstByteDelay) {
		return
	}
	_, _ = io.WriteString(w, body)
}

func openAIErrorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	case status == http.StatusUnauthorized:
		return "invalid_api_key"
	case status >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}

func anthropicErrorType(status int) string {
	switch status {
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// mustJSON encodes maps of plain values, which cannot fail.
func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func (r Reply) usage() Usage {
	if r.Usage != nil {
		return *r.Usage
	}
	return Usage{PromptTokens: 10, CompletionTokens: 5}
}

func (r Reply) chunks() int {
	if r.Chunks > 0 {
		return r.Chunks
	}
	return 3
}

// split cuts s into at most n pieces of similar length on rune boundaries.
func split(s string, n int) []string {
	runes := []rune(s)
	if len(runes) == 0 {
		return nil
	}
	n = min(n, len(runes))
	out := make([]string, 0, n)
	for i := range n {
		lo, hi := i*len(runes)/n, (i+1)*len(runes)/n
		out = append(out, string(runes[lo:hi]))
	}
	return out
}
