// Package signaltest is a local stand-in for a signal-cli daemon, written
// from signal-cli-jsonrpc(5): the HTTP endpoints of `daemon --http`
// (POST /api/v1/rpc taking one JSON-RPC 2.0 request, GET /api/v1/events
// streaming `receive` events as Server-Sent Events with ids, keep-alive
// comments and replay after Last-Event-ID, GET /api/v1/check) and the
// newline-delimited JSON-RPC socket of `daemon --tcp`.
//
// It implements the methods the channel uses — send, sendTyping,
// sendReaction, listGroups, getAttachment — checks what a client sends the
// way signal-cli does (Content-Type, the account param, recipient or group
// but not both, known groups) and records protocol violations. It runs one
// account; requests naming another get signal-cli's "Specified account does
// not exist" error.
//
// Concurrency: a Server is safe for concurrent use by the code under test
// and the test: every method may be called from any goroutine, and the HTTP
// handlers, the TCP listener's accept goroutine and each connection share
// one lock. New calls t.Fatal, so it belongs to the goroutine running the
// test; its t.Cleanup drops the connections and waits for the accept
// goroutine before it closes the server.
package signaltest

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Account is the bot's number the daemon runs.
const Account = "+15550001111"

// AccountUUID is its ACI.
const AccountUUID = "0b0b0b0b-1111-4222-8333-444455556666"

// User is a Signal user.
type User struct {
	Number string // "" when the user hides it
	UUID   string
	Name   string
}

// Mention is an @mention in a Message: Text holds U+FFFC where it goes.
type Mention struct {
	User  User
	Start int // in UTF-16 units
}

// File is an attachment a user sends.
type File struct {
	Name, ContentType string
	Data              []byte
}

// Message is what a user writes.
type Message struct {
	From        User
	Group       string // group id; "" = a direct message to the bot
	Text        string
	Mentions    []Mention
	Attachments []File
	// QuoteBot quotes one of the bot's messages.
	QuoteBot bool
}

// Sent is one message the bot sent.
type Sent struct {
	Recipient      string // for direct messages
	GroupID        string
	Text           string
	Attachments    []SentFile
	Timestamp      int64 // the id signal-cli returned
	QuoteTimestamp int64
	At             time.Time
}

// SentFile is an attachment the bot sent, decoded from its data URI.
type SentFile struct {
	ContentType, Name string
	Data              []byte
}

// Server is the fake daemon.
type Server struct {
	// URL is the HTTP base ("http://127.0.0.1:port").
	URL string
	// TCPAddr is the JSON-RPC socket ("127.0.0.1:port").
	TCPAddr string
	// KeepAlive is the interval of SSE keep-alive comments (15 s, like
	// signal-cli); set it before the client connects.
	KeepAlive time.Duration

	srv *httptest.Server
	ln  net.Listener

	mu         sync.Mutex
	events     []event // the last 1000
	nextID     int
	subs       map[*subscriber]struct{}
	conns      map[net.Conn]*sync.Mutex
	groups     map[string]string // id -> name
	files      map[string][]byte
	sent       []Sent
	typing     []string
	reactions  []map[string]any
	violations []string
	clock      int64
	streams    int // SSE connections asked for
	refuse     bool
	lastIDs    []string
}

type event struct {
	id   string
	data string
}

type subscriber struct {
	ch   chan event
	done chan struct{}
}

// New starts the daemon; it stops when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{KeepAlive: 15 * time.Second, subs: map[*subscriber]struct{}{}, conns: map[net.Conn]*sync.Mutex{},
		groups: map[string]string{}, files: map[string][]byte{}, clock: time.Now().UnixMilli()}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/rpc", s.handleRPC)
	mux.HandleFunc("/api/v1/events", s.handleEvents)
	mux.HandleFunc("/api/v1/check", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.ln, s.TCPAddr = ln, ln.Addr().String()
	acceptDone := make(chan struct{})
	go func() {
		defer close(acceptDone)
		s.accept()
	}()
	t.Cleanup(func() {
		s.Drop()
		_ = ln.Close()
		<-acceptDone
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
	return s
}

// AddGroup makes a group the bot is a member of.
func (s *Server) AddGroup(id, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups[id] = name
}

// tick returns a fresh millisecond timestamp (never twice the same).
func (s *Server) tick() int64 {
	s.clock = max(s.clock+1, time.Now().UnixMilli())
	return s.clock
}

// Emit makes the daemon receive m and returns its timestamp, the message's
// id on Signal.
func (s *Server) Emit(m Message) int64 {
	s.mu.Lock()
	ts := s.tick()
	data := map[string]any{"timestamp": ts, "message": m.Text, "expiresInSeconds": 0, "viewOnce": false}
	mentions := []map[string]any{}
	for _, mm := range m.Mentions {
		mentions = append(mentions, map[string]any{"name": mm.User.Name, "number": nilIfEmpty(mm.User.Number), "uuid": mm.User.UUID, "start": mm.Start, "length": 1})
	}
	data["mentions"] = mentions
	atts := []map[string]any{}
	for i, f := range m.Attachments {
		id := fmt.Sprintf("att%d_%d", ts, i)
		s.files[id] = f.Data
		atts = append(atts, map[string]any{"contentType": f.ContentType, "filename": f.Name, "id": id, "size": len(f.Data)})
	}
	data["attachments"] = atts
	if m.Group != "" {
		data["groupInfo"] = map[string]any{"groupId": m.Group, "type": "DELIVER"}
	}
	if m.QuoteBot {
		data["quote"] = map[string]any{"id": ts - 1000, "author": Account, "authorNumber": Account, "authorUuid": AccountUUID, "text": "earlier answer"}
	}
	source := m.From.Number
	if source == "" {
		source = m.From.UUID
	}
	env := map[string]any{"envelope": map[string]any{
		"source": source, "sourceNumber": nilIfEmpty(m.From.Number), "sourceUuid": m.From.UUID, "sourceName": m.From.Name,
		"sourceDevice": 1, "timestamp": ts, "dataMessage": data,
	}, "account": Account}
	b, _ := json.Marshal(env)
	s.publishLocked(string(b))
	s.mu.Unlock()
	return ts
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// EmitRaw publishes data as a receive event as is (to send garbage).
func (s *Server) EmitRaw(data string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publishLocked(data)
}

// EmitTyping publishes a typing notification (no data message).
func (s *Server) EmitTyping(from User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"envelope": map[string]any{"source": from.Number, "sourceNumber": from.Number, "sourceUuid": from.UUID,
		"timestamp": s.tick(), "typingMessage": map[string]any{"action": "STARTED"}}, "account": Account})
	s.publishLocked(string(b))
}

func (s *Server) publishLocked(data string) {
	s.nextID++
	ev := event{id: strconv.Itoa(s.nextID), data: data}
	s.events = append(s.events, ev)
	if len(s.events) > 1000 {
		s.events = s.events[len(s.events)-1000:]
	}
	for sub := range s.subs {
		select {
		case sub.ch <- ev:
		default:
			s.violations = append(s.violations, "an SSE client fell 256 events behind; disconnected")
			close(sub.done)
			delete(s.subs, sub)
		}
	}
	line := fmt.Sprintf(`{"jsonrpc":"2.0","method":"receive","params":%s}`+"\n", data)
	for conn, wmu := range s.conns {
		wmu.Lock()
		_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.WriteString(conn, line)
		wmu.Unlock()
	}
}

// Drop closes every event stream and socket, as a restarted daemon would.
func (s *Server) Drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for sub := range s.subs {
		close(sub.done)
		delete(s.subs, sub)
	}
	for conn := range s.conns {
		_ = conn.Close()
		delete(s.conns, conn)
	}
}

// Sockets returns how many JSON-RPC sockets are connected.
func (s *Server) Sockets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// RefuseStreams makes GET /api/v1/events answer 503 (a daemon starting
// up) while on.
func (s *Server) RefuseStreams(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = on
}

// Sent returns what the bot sent, in order.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// Typing returns the chats sendTyping was called for ("+number" or
// "group:id"), in order.
func (s *Server) Typing() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.typing...)
}

// Streams returns how many event streams were opened and the
// Last-Event-ID each one sent.
func (s *Server) Streams() (int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams, append([]string(nil), s.lastIDs...)
}

// Violations lists what the client did that signal-cli would refuse or
// that breaks the protocol.
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.violations...)
}

func (s *Server) violate(format string, args ...any) {
	s.violations = append(s.violations, fmt.Sprintf(format, args...))
}

func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	if a := r.URL.Query().Get("account"); a != "" && a != Account {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	sub := &subscriber{ch: make(chan event, 256), done: make(chan struct{})}
	s.mu.Lock()
	s.streams++
	last := r.Header.Get("Last-Event-ID")
	s.lastIDs = append(s.lastIDs, last)
	if s.refuse {
		s.mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	var replay []event
	if last != "" {
		replay = s.events
		for i, ev := range s.events {
			if ev.id == last {
				replay = s.events[i+1:]
			}
		}
		replay = append([]event(nil), replay...)
	}
	s.subs[sub] = struct{}{}
	keep := s.KeepAlive
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if _, ok := s.subs[sub]; ok {
			delete(s.subs, sub)
		}
		s.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	write := func(ev event) bool {
		_, err := fmt.Fprintf(w, "id:%s\nevent:receive\ndata:%s\n\n", ev.id, ev.data)
		fl.Flush()
		return err == nil
	}
	fl.Flush()
	for _, ev := range replay {
		if !write(ev) {
			return
		}
	}
	t := time.NewTicker(keep)
	defer t.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-sub.done:
			return
		case ev := <-sub.ch:
			if !write(ev) {
				return
			}
		case <-t.C:
			if _, err := io.WriteString(w, ":\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	ID      json.RawMessage `json:"id"`
}

func (s *Server) handleRPC(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		s.mu.Lock()
		s.violate("POST /api/v1/rpc without Content-Type application/json")
		s.mu.Unlock()
		w.WriteHeader(http.StatusUnsupportedMediaType)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	out := s.dispatch(body)
	if out == nil {
		w.WriteHeader(http.StatusCreated) // a notification: no response
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// dispatch answers one request line.
func (s *Server) dispatch(body []byte) []byte {
	var req rpcRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return respond(nil, nil, &rpcErr{-32700, "Parse error"})
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		return respond(req.ID, nil, &rpcErr{-32600, "method field must be set"})
	}
	var params map[string]any
	if len(req.Params) > 0 && json.Unmarshal(req.Params, &params) != nil {
		return respond(req.ID, nil, &rpcErr{-32602, "params must be an object"})
	}
	if params == nil {
		params = map[string]any{}
	}
	if a, ok := params["account"].(string); ok && a != Account {
		return respond(req.ID, nil, &rpcErr{-32602, "Specified account does not exist"})
	}
	result, rerr := s.method(req.Method, params)
	if len(req.ID) == 0 {
		return nil
	}
	return respond(req.ID, result, rerr)
}

type rpcErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func respond(id json.RawMessage, result any, e *rpcErr) []byte {
	m := map[string]any{"jsonrpc": "2.0", "id": id}
	if id == nil {
		m["id"] = nil
	}
	if e != nil {
		m["error"] = e
	} else {
		m["result"] = result
	}
	b, _ := json.Marshal(m)
	return b
}

var (
	phone = regexp.MustCompile(`^\+[1-9][0-9]{5,14}$`)
	uuid  = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// target checks recipient / groupId and returns "+number", "uuid" or
// "group:id".
func (s *Server) target(method string, p map[string]any) (string, string, *rpcErr) {
	var recips []string
	switch v := p["recipient"].(type) {
	case string:
		recips = []string{v}
	case []any:
		for _, x := range v {
			if str, ok := x.(string); ok {
				recips = append(recips, str)
			}
		}
	}
	group, _ := p["groupId"].(string)
	switch {
	case len(recips) > 0 && group != "":
		s.violate("%s with both recipient and groupId", method)
		return "", "", &rpcErr{-1, "You cannot specify recipients by phone number and groups at the same time"}
	case group != "":
		if _, ok := s.groups[group]; !ok {
			return "", "", &rpcErr{-1, "Invalid group id: " + group}
		}
		return "", group, nil
	case len(recips) == 1:
		if !phone.MatchString(recips[0]) && !uuid.MatchString(recips[0]) {
			return "", "", &rpcErr{-1, "Invalid number: " + recips[0]}
		}
		return recips[0], "", nil
	case len(recips) > 1:
		return "", "", &rpcErr{-1, "the fake takes one recipient at a time"}
	}
	return "", "", &rpcErr{-1, "No recipients given"}
}

func (s *Server) method(name string, p map[string]any) (any, *rpcErr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch name {
	case "send":
		rcpt, group, e := s.target(name, p)
		if e != nil {
			return nil, e
		}
		text, _ := p["message"].(string)
		var files []SentFile
		var raw []any
		switch v := p["attachments"].(type) {
		case []any:
			raw = v
		case string:
			raw = []any{v}
		}
		for _, a := range raw {
			str, _ := a.(string)
			f, ok := parseDataURI(str)
			if !ok {
				s.violate("send: attachment %.40q is not a data URI (the fake cannot read paths on the client's disk)", str)
				return nil, &rpcErr{-1, "Failed to read attachment"}
			}
			files = append(files, f)
		}
		if text == "" && len(files) == 0 {
			return nil, &rpcErr{-1, "Sending empty message is not allowed, either a message, attachment or sticker must be given."}
		}
		ts := s.tick()
		sent := Sent{Recipient: rcpt, GroupID: group, Text: text, Attachments: files, Timestamp: ts, At: time.Now()}
		if q, ok := p["quoteTimestamp"].(float64); ok {
			sent.QuoteTimestamp = int64(q)
			if _, ok := p["quoteAuthor"].(string); !ok {
				s.violate("send: quoteTimestamp without quoteAuthor")
			}
		}
		s.sent = append(s.sent, sent)
		addr := rcpt
		if group != "" {
			addr = Account
		}
		return map[string]any{"timestamp": ts, "results": []any{map[string]any{"recipientAddress": map[string]any{"number": addr}, "type": "SUCCESS"}}}, nil
	case "sendTyping":
		rcpt, group, e := s.target(name, p)
		if e != nil {
			return nil, e
		}
		if group != "" {
			rcpt = "group:" + group
		}
		s.typing = append(s.typing, rcpt)
		return map[string]any{}, nil
	case "sendReaction":
		if _, _, e := s.target(name, p); e != nil {
			return nil, e
		}
		if _, ok := p["emoji"].(string); !ok {
			return nil, &rpcErr{-1, "emoji is required"}
		}
		s.reactions = append(s.reactions, p)
		return map[string]any{"timestamp": s.tick()}, nil
	case "listGroups":
		out := []any{}
		for id, n := range s.groups {
			out = append(out, map[string]any{"id": id, "name": n, "isMember": true, "isBlocked": false})
		}
		return out, nil
	case "getAttachment":
		id, _ := p["id"].(string)
		data, ok := s.files[id]
		if !ok {
			return nil, &rpcErr{-1, "An error occurred reading attachment: " + id}
		}
		return map[string]any{"data": base64.StdEncoding.EncodeToString(data)}, nil
	}
	return nil, &rpcErr{-32601, "Method not implemented"}
}

// parseDataURI reads "data:<mime>;filename=<name>;base64,<data>".
func parseDataURI(s string) (SentFile, bool) {
	rest, ok := strings.CutPrefix(s, "data:")
	if !ok {
		return SentFile{}, false
	}
	head, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return SentFile{}, false
	}
	parts := strings.Split(head, ";")
	if len(parts) < 2 || parts[len(parts)-1] != "base64" {
		return SentFile{}, false
	}
	f := SentFile{ContentType: parts[0]}
	for _, p := range parts[1 : len(parts)-1] {
		if v, ok := strings.CutPrefix(p, "filename="); ok {
			f.Name = v
		}
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return SentFile{}, false
	}
	f.Data = data
	return f, true
}

// accept serves the JSON-RPC socket.
func (s *Server) accept() {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		wmu := &sync.Mutex{}
		s.mu.Lock()
		s.conns[conn] = wmu
		s.mu.Unlock()
		wg.Go(func() {
			defer func() {
				s.mu.Lock()
				delete(s.conns, conn)
				s.mu.Unlock()
				_ = conn.Close()
			}()
			sc := bufio.NewScanner(conn)
			sc.Buffer(make([]byte, 64<<10), 64<<20)
			for sc.Scan() {
				out := s.dispatch(sc.Bytes())
				if out == nil {
					continue
				}
				wmu.Lock()
				_, err := conn.Write(append(out, '\n'))
				wmu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
}
