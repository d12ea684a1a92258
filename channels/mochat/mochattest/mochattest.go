// Package mochattest is a local Mochat (claw) server for tests: the HTTP
// API the mochat channel uses, with sessions watched by long poll, panels
// read by polling, and sends recorded. It checks the X-Claw-Token header on
// every call and answers in the {code, message, data} envelope.
//
// Concurrency: a Server and a SocketIO are safe for concurrent use by the
// code under test and the test: every method may be called from any
// goroutine, and the handlers (long polls included) run on the httptest
// server's goroutines under one lock. New and StartSocketIO call t.Fatal and
// belong to the goroutine running the test. New's t.Cleanup closes the
// server; StartSocketIO's ends the Socket.IO process and waits for the
// goroutine reading its output.
package mochattest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// Token is the claw token the server accepts.
const Token = "claw-token-3f9a7c21"

// BotID is the agent account's user id.
const BotID = "user_bot"

// Sent is a message the bot sent.
type Sent struct {
	Session, Panel, GroupID, ReplyTo string
	MessageID, Content               string
	At                               time.Time
}

type event struct {
	Seq       int64           `json:"seq"`
	Type      string          `json:"type"`
	Timestamp string          `json:"timestamp"`
	Payload   json.RawMessage `json:"payload"`
}

// Server is the fake.
type Server struct {
	URL string
	srv *httptest.Server

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every new event
	events   map[string][]event
	cursors  map[string]int64 // the highest cursor each session was watched from
	panels   map[string][]json.RawMessage
	groups   map[string]string
	sent     []Sent
	next     int64
	failFor  time.Time
	badCalls []string // calls the adapter made wrongly
	// push, set by StartSocketIO, emits an event to a Socket.IO room.
	push      func(room, event string, payload any)
	longPolls int // watch calls that waited (timeoutMs > 0)
}

// New starts a server with the given sessions and panels (panel id ->
// group id); it stops with the test.
func New(t testing.TB, sessions []string, panels map[string]string) *Server {
	s := &Server{changed: make(chan struct{}), events: map[string][]event{}, cursors: map[string]int64{},
		panels: map[string][]json.RawMessage{}, groups: map[string]string{}}
	for _, id := range sessions {
		s.events[id] = nil
	}
	for id, g := range panels {
		s.panels[id] = nil
		s.groups[id] = g
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/claw/sessions/list", s.wrap(s.list))
	mux.HandleFunc("POST /api/claw/groups/get", s.wrap(s.groupsGet))
	mux.HandleFunc("POST /api/claw/sessions/watch", s.wrap(s.watch))
	mux.HandleFunc("POST /api/claw/groups/panels/messages", s.wrap(s.panelMessages))
	mux.HandleFunc("POST /api/claw/sessions/send", s.wrap(s.sessionSend))
	mux.HandleFunc("POST /api/claw/groups/panels/send", s.wrap(s.panelSend))
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

type handler func(ctx context.Context, body map[string]any) (any, int, string)

// wrap checks the token and the method, decodes the body and writes the
// envelope.
func (s *Server) wrap(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("X-Claw-Token") != Token {
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]any{"code": 401, "message": "invalid claw token"})
			return
		}
		s.mu.Lock()
		failing := time.Now().Before(s.failFor)
		s.mu.Unlock()
		if failing {
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]any{"code": 503, "message": "restarting"})
			return
		}
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			s.bad(fmt.Sprintf("%s: body is not a JSON object: %v", r.URL.Path, err))
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"code": 400, "message": "bad json"})
			return
		}
		data, code, msg := h(r.Context(), body)
		if code != 200 {
			_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "message": msg})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"code": 200, "data": data})
	}
}

func (s *Server) bad(what string) {
	s.mu.Lock()
	s.badCalls = append(s.badCalls, what)
	s.mu.Unlock()
}

// BadCalls lists requests the adapter made against the protocol.
func (s *Server) BadCalls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.badCalls)
}

func (s *Server) list(context.Context, map[string]any) (any, int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for id := range s.events {
		out = append(out, map[string]any{"sessionId": id})
	}
	return map[string]any{"sessions": out}, 200, ""
}

func (s *Server) groupsGet(context.Context, map[string]any) (any, int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for id := range s.panels {
		out = append(out, map[string]any{"id": id, "name": "panel " + id})
	}
	return map[string]any{"panels": out}, 200, ""
}

func num(v any) (int64, bool) {
	f, ok := v.(float64)
	return int64(f), ok
}

// watch answers at once when the session has events after cursor, else
// waits up to timeoutMs (capped at 2 s) for one.
func (s *Server) watch(ctx context.Context, body map[string]any) (any, int, string) {
	id, _ := body["sessionId"].(string)
	cursor, ok1 := num(body["cursor"])
	timeout, ok2 := num(body["timeoutMs"])
	limit, ok3 := num(body["limit"])
	if !ok1 || !ok2 || !ok3 || limit <= 0 {
		s.bad(fmt.Sprintf("watch: cursor, timeoutMs and limit must be numbers: %v", body))
		return nil, 400, "bad request"
	}
	deadline := time.After(min(time.Duration(timeout)*time.Millisecond, 2*time.Second))
	if timeout > 0 {
		s.mu.Lock()
		s.longPolls++
		s.mu.Unlock()
	}
	for {
		s.mu.Lock()
		evs, known := s.events[id]
		if !known {
			s.mu.Unlock()
			return nil, 404, "no such session"
		}
		if cursor > s.cursors[id] {
			s.cursors[id] = cursor
		}
		var out []event
		last := cursor
		for _, e := range evs {
			if e.Seq > cursor && int64(len(out)) < limit {
				out = append(out, e)
				last = e.Seq
			}
		}
		if len(evs) > 0 && cursor == 0 && len(out) == 0 {
			last = evs[len(evs)-1].Seq
		}
		changed := s.changed
		s.mu.Unlock()
		if len(out) > 0 || timeout == 0 {
			return map[string]any{"sessionId": id, "cursor": last, "events": out}, 200, ""
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, 499, "client gone"
		case <-deadline:
			return map[string]any{"sessionId": id, "cursor": last, "events": []event{}}, 200, ""
		}
	}
}

func (s *Server) panelMessages(_ context.Context, body map[string]any) (any, int, string) {
	id, _ := body["panelId"].(string)
	limit, ok := num(body["limit"])
	if !ok || limit <= 0 {
		s.bad(fmt.Sprintf("panels/messages: limit must be a positive number: %v", body))
		return nil, 400, "bad request"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	msgs, known := s.panels[id]
	if !known {
		return nil, 404, "no such panel"
	}
	var out []json.RawMessage // newest first
	for i := len(msgs) - 1; i >= 0 && int64(len(out)) < limit; i-- {
		out = append(out, msgs[i])
	}
	return map[string]any{"panelId": id, "groupId": s.groups[id], "messages": out}, 200, ""
}

func (s *Server) record(m Sent) (any, int, string) {
	if m.Content == "" {
		s.bad("send: empty content")
		return nil, 400, "content required"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	m.MessageID, m.At = fmt.Sprintf("out-%d", s.next), time.Now()
	s.sent = append(s.sent, m)
	return map[string]any{"messageId": m.MessageID}, 200, ""
}

func (s *Server) sessionSend(_ context.Context, body map[string]any) (any, int, string) {
	id, _ := body["sessionId"].(string)
	s.mu.Lock()
	_, known := s.events[id]
	s.mu.Unlock()
	if !known {
		return nil, 404, "no such session"
	}
	content, _ := body["content"].(string)
	reply, _ := body["replyTo"].(string)
	return s.record(Sent{Session: id, Content: content, ReplyTo: reply})
}

func (s *Server) panelSend(_ context.Context, body map[string]any) (any, int, string) {
	id, _ := body["panelId"].(string)
	s.mu.Lock()
	group, known := s.groups[id]
	s.mu.Unlock()
	if !known {
		return nil, 404, "no such panel"
	}
	if g, _ := body["groupId"].(string); g != "" && g != group {
		s.bad(fmt.Sprintf("panels/send: groupId %q is not the panel's group %q", g, group))
	}
	content, _ := body["content"].(string)
	reply, _ := body["replyTo"].(string)
	return s.record(Sent{Panel: id, GroupID: group, Content: content, ReplyTo: reply})
}

// Message is what a user writes.
type Message struct {
	From, Text string
	// Mentions lists the user ids the message mentions (panels).
	Mentions []string
	// Payload replaces the whole message payload (malformed input).
	Payload json.RawMessage
	// At is when it was written (default now).
	At time.Time
}

func (m Message) at() time.Time {
	if m.At.IsZero() {
		return time.Now()
	}
	return m.At
}

func (s *Server) payload(id string, m Message) json.RawMessage {
	if m.Payload != nil {
		return m.Payload
	}
	b, _ := json.Marshal(map[string]any{
		"messageId": id, "author": m.From, "content": m.Text,
		"authorInfo": map[string]any{"id": m.From, "nickname": "nick " + m.From},
		"meta":       map[string]any{"mentions": m.Mentions},
		"createdAt":  m.at().Format(time.RFC3339Nano),
	})
	return b
}

// Say adds a message to a session and returns its id.
func (s *Server) Say(session string, m Message) string {
	s.mu.Lock()
	s.next++
	id := fmt.Sprintf("msg-%d", s.next)
	ev := event{Seq: s.next, Type: "message.add", Timestamp: m.at().Format(time.RFC3339Nano), Payload: s.payload(id, m)}
	s.events[session] = append(s.events[session], ev)
	close(s.changed)
	s.changed = make(chan struct{})
	push := s.push
	s.mu.Unlock()
	if push != nil {
		push("session:"+session, "claw.session.events", map[string]any{"sessionId": session, "cursor": ev.Seq, "events": []event{ev}})
	}
	return id
}

// Post adds a message to a panel and returns its id.
func (s *Server) Post(panel string, m Message) string {
	s.mu.Lock()
	s.next++
	id := fmt.Sprintf("msg-%d", s.next)
	p := s.payload(id, m)
	s.panels[panel] = append(s.panels[panel], p)
	ev := event{Seq: s.next, Type: "message.add", Timestamp: m.at().Format(time.RFC3339Nano), Payload: p}
	push := s.push
	s.mu.Unlock()
	if push != nil {
		push("panel:"+panel, "claw.panel.events", map[string]any{"sessionId": panel, "panelId": panel, "events": []event{ev}})
	}
	return id
}

// AddSession creates a session (for discovery with "*").
func (s *Server) AddSession(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.events[id]; !ok {
		s.events[id] = nil
	}
}

// Watched reports whether the session was watched from a cursor at or past
// the message's sequence number (the adapter has taken it).
func (s *Server) Watched(session, messageID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.events[session] {
		var p struct {
			MessageID string `json:"messageId"`
		}
		if json.Unmarshal(e.Payload, &p) == nil && p.MessageID == messageID {
			return s.cursors[session] >= e.Seq
		}
	}
	return false
}

// Fail makes every call fail with 503 for d and wakes the long polls.
func (s *Server) Fail(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failFor = time.Now().Add(d)
	close(s.changed)
	s.changed = make(chan struct{})
}

// LongPolls counts the session watches that asked to wait (the HTTP
// receive path; Socket.IO mode makes none).
func (s *Server) LongPolls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.longPolls
}

// Sent returns what the bot sent, in order.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sent)
}
