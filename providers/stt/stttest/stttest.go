// Package stttest is a local speech-to-text service for tests that speaks
// every API shape package stt knows, told apart by the request's path
// (under any base path, so one server stands for every provider):
//
//   - POST …/audio/transcriptions: a multipart upload (OpenAI's Whisper
//     API) or a JSON body with base64 input_audio (OpenRouter); answers
//     {"text": …}.
//   - POST …/chat/completions: MiMo's ASR; answers a chat completion whose
//     message content is the text.
//   - POST …/audio/asr/sse: StepFun's ASR; answers server-sent events, a
//     delta then "transcript.text.done" (or an "error" event).
//   - POST …/upload, POST …/transcript, GET …/transcript/{id}: AssemblyAI;
//     the transcript is "processing" for as many polls as SetPending says,
//     then "completed" (or "error").
//
// Every request is recorded with what it carried. With SetKey, a request
// without that key (as "Bearer <key>", or the bare key for AssemblyAI) is
// answered 401 with a body that repeats the credential it sent, as some
// services do, so tests can check that errors never show a key.
//
// All methods are safe for concurrent use; New registers t.Cleanup.
package stttest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Request is one recorded request.
type Request struct {
	Method, Path string
	Header       http.Header
	// Fields are a multipart body's form fields, the file excluded.
	Fields map[string]string
	// JSON is a JSON body, decoded.
	JSON map[string]any
	// Audio is the audio the request carried: the multipart file, the
	// decoded base64 data (data URLs included) or the upload's body.
	Audio []byte
	// FileName and FileType are the multipart file's name and content type.
	FileName, FileType string
}

// failure is a canned error answer.
type failure struct {
	status int
	body   string
}

// Server is the fake service.
type Server struct {
	// URL is the server's root; a client's apiBase is URL plus any path
	// ("/v1", "/openai/v1", "/v2").
	URL string

	srv *httptest.Server
	t   testing.TB

	mu         sync.Mutex
	text       string
	key        string
	fails      []failure
	pending    int
	polls      int
	transcript string // AssemblyAI's error message; "" completes
	sseError   string
	requests   []Request
}

// New starts a server that answers "hello from the fake".
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, text: "hello from the fake"}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// SetText sets the transcript every API answers with.
func (s *Server) SetText(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.text = text
}

// SetKey makes the server refuse requests that do not carry key.
func (s *Server) SetKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = key
}

// Fail answers the next n requests with status and body.
func (s *Server) Fail(n, status int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.fails = append(s.fails, failure{status, body})
	}
}

// SetPending makes AssemblyAI's transcript "processing" for n polls.
func (s *Server) SetPending(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = n
}

// FailTranscript makes AssemblyAI's transcript end in status "error"
// with msg, and StepFun's stream in an "error" event with msg.
func (s *Server) FailTranscript(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.transcript, s.sseError = msg, msg
}

// Requests returns the requests so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Polls counts the AssemblyAI transcript polls so far.
func (s *Server) Polls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.polls
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	req, err := record(r)
	if err != nil {
		s.t.Errorf("stttest: %s %s: %v", r.Method, r.URL.Path, err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	text, key, sseError := s.text, s.key, s.sseError
	var fail *failure
	if len(s.fails) > 0 {
		fail = &s.fails[0]
		s.fails = s.fails[1:]
	}
	s.mu.Unlock()

	assembly := strings.HasSuffix(r.URL.Path, "/upload") || strings.HasSuffix(r.URL.Path, "/transcript") || strings.Contains(r.URL.Path, "/transcript/")
	if key != "" {
		want := "Bearer " + key
		if assembly {
			want = key
		}
		if got := r.Header.Get("Authorization"); got != want {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"message": "Incorrect API key provided: " + got}})
			return
		}
	}
	if fail != nil {
		w.WriteHeader(fail.status)
		_, _ = io.WriteString(w, fail.body)
		return
	}
	path := r.URL.Path
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/audio/transcriptions"):
		writeJSON(w, map[string]any{"text": text})
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/chat/completions"):
		writeJSON(w, map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": req.JSON["model"],
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": text}}}})
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/audio/asr/sse"):
		w.Header().Set("Content-Type", "text/event-stream")
		flush := func(ev map[string]any) {
			b, _ := json.Marshal(ev)
			fmt.Fprintf(w, "data: %s\n\n", b)
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		}
		if sseError != "" {
			flush(map[string]any{"type": "error", "message": sseError})
			return
		}
		flush(map[string]any{"type": "transcript.text.delta", "delta": text})
		flush(map[string]any{"type": "transcript.text.done", "text": text})
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/upload"):
		writeJSON(w, map[string]any{"upload_url": s.URL + "/cdn/upload-1"})
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/transcript"):
		writeJSON(w, map[string]any{"id": "tr_1", "status": "queued"})
	case r.Method == http.MethodGet && strings.Contains(path, "/transcript/"):
		s.mu.Lock()
		s.polls++
		status, pending := "processing", s.pending > 0
		if pending {
			s.pending--
		}
		msg := s.transcript
		s.mu.Unlock()
		id := path[strings.LastIndex(path, "/")+1:]
		switch {
		case pending:
			writeJSON(w, map[string]any{"id": id, "status": status})
		case msg != "":
			writeJSON(w, map[string]any{"id": id, "status": "error", "error": msg})
		default:
			writeJSON(w, map[string]any{"id": id, "status": "completed", "text": text})
		}
	default:
		s.t.Errorf("stttest: unexpected request %s %s", r.Method, path)
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// record reads what r carried.
func record(r *http.Request) (Request, error) {
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone()}
	ct, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "multipart/form-data":
		mr := multipart.NewReader(r.Body, params["boundary"])
		req.Fields = map[string]string{}
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				return req, nil
			}
			if err != nil {
				return req, err
			}
			b, err := io.ReadAll(p)
			if err != nil {
				return req, err
			}
			if p.FileName() != "" {
				req.Audio, req.FileName, req.FileType = b, p.FileName(), p.Header.Get("Content-Type")
			} else {
				req.Fields[p.FormName()] = string(b)
			}
		}
	case "application/json":
		if err := json.NewDecoder(r.Body).Decode(&req.JSON); err != nil {
			return req, err
		}
		req.Audio = audioIn(req.JSON)
	case "application/octet-stream":
		b, err := io.ReadAll(r.Body)
		req.Audio = b
		return req, err
	}
	return req, nil
}

// audioIn finds the base64 audio of a JSON body: OpenRouter's
// input_audio.data, MiMo's data URL, StepFun's audio.data.
func audioIn(body map[string]any) []byte {
	var data string
	if ia, ok := body["input_audio"].(map[string]any); ok {
		data, _ = ia["data"].(string)
	}
	if a, ok := body["audio"].(map[string]any); ok {
		data, _ = a["data"].(string)
	}
	if msgs, ok := body["messages"].([]any); ok && len(msgs) > 0 {
		m, _ := msgs[0].(map[string]any)
		parts, _ := m["content"].([]any)
		if len(parts) > 0 {
			p, _ := parts[0].(map[string]any)
			ia, _ := p["input_audio"].(map[string]any)
			data, _ = ia["data"].(string)
		}
	}
	if _, after, ok := strings.Cut(data, ";base64,"); ok {
		data = after
	}
	b, _ := base64.StdEncoding.DecodeString(data)
	return b
}
