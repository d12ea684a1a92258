// Package ttstest is a local OpenAI-compatible speech server for tests:
// POST {URL}/v1/audio/speech answers with a real Ogg/Opus file (0.6 s of
// a 440 Hz tone, encoded with libopus by opusenc and committed here), or
// with whatever Audio a test sets. Requests are recorded.
//
// All methods are safe for concurrent use; New registers t.Cleanup.
package ttstest

import (
	_ "embed"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Opus is the Ogg/Opus file the server returns by default.
//
//go:embed hello.opus
var Opus []byte

// Request is one recorded speech request.
type Request struct {
	Path          string
	Authorization string
	Body          map[string]any
}

// Server is the fake speech endpoint.
type Server struct {
	// URL is the base URL; the apiBase is URL + "/v1".
	URL string

	srv *httptest.Server
	t   testing.TB

	mu       sync.Mutex
	audio    []byte
	status   int
	requests []Request
}

// New starts a server answering with Opus.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, audio: Opus, status: http.StatusOK}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// APIBase is the apiBase for clients.
func (s *Server) APIBase() string { return s.URL + "/v1" }

// SetAudio makes the server answer with status and body instead.
func (s *Server) SetAudio(status int, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.audio = status, body
}

// Requests returns the requests so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/audio/speech" {
		s.t.Errorf("ttstest: unexpected request %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	req := Request{Path: r.URL.Path, Authorization: r.Header.Get("Authorization")}
	if err := json.Unmarshal(raw, &req.Body); err != nil {
		s.t.Errorf("ttstest: body is not JSON: %v", err)
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	status, audio := s.status, s.audio
	s.mu.Unlock()
	if status == http.StatusOK {
		w.Header().Set("Content-Type", "audio/ogg")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(status)
	_, _ = w.Write(audio)
}
