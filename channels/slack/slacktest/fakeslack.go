// Package slacktest is a local stand-in for Slack in tests: an httptest
// server answering the Web API methods the adapter calls (auth.test,
// apps.connections.open, chat.postMessage, chat.update, reactions.add,
// the file upload methods, views.publish), taking slash commands' answers
// at their response_url, and serving a Socket Mode WebSocket that sends
// "hello", then the envelopes a test pushes (events_api, interactive,
// slash_commands), and records the acknowledgements it gets back with
// their payloads.
//
// Concurrency: a Server is safe for concurrent use by the code under test
// and the test: every method may be called from any goroutine, and the Web
// API handlers and each Socket Mode connection (with a reader goroutine
// taking the acknowledgements) share one lock. New registers t.Cleanup to
// shut it down.
package slacktest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Identities the fake reports.
const (
	AppToken  = "xapp-1-fake"
	BotToken  = "xoxb-fake"
	BotUserID = "UBOT"
)

// Sent is one chat.postMessage or chat.update the fake received.
type Sent struct {
	Channel  string
	TS       string // the message's ts
	ThreadTS string
	Edit     bool
	Text     string // as sent (mrkdwn)
	Rendered string // Text with &amp; &lt; &gt; unescaped
	// Buttons are the buttons of the message's actions blocks.
	Buttons []Button
	At      time.Time
}

// Button is one Block Kit button.
type Button struct {
	ActionID, Text, Value string
}

// File is one completed upload.
type File struct {
	Channel, ThreadTS, Name string
	// Title is the title given at files.completeUploadExternal.
	Title string
	Data  []byte
}

// Reaction is one reactions.add.
type Reaction struct{ Channel, TS, Name string }

// Server is the fake.
type Server struct {
	URL string // the base; the Web API is URL + "/api/"

	t   testing.TB
	srv *httptest.Server

	mu        sync.Mutex
	pending   []string // envelopes not yet written to a socket
	wake      chan struct{}
	conns     map[*websocket.Conn]bool
	acks      map[string]Ack
	pushedAt  map[string]time.Time // when an envelope was queued
	views     []View
	responses []Response
	slashes   map[string]*slash // by trigger id
	sent      []Sent
	reactions []Reaction
	files     []File
	nextTS    int
	nextEnv   int
	failOpens int      // apps.connections.open calls still to fail
	postErrs  []apiErr // errors for the next chat.postMessage calls
	opens     int
	shared    map[string]SharedFile // files users shared, by id
	nextFile  int
	fileGets  int
}

type apiErr struct {
	code       string
	retryAfter int // > 0: HTTP 429 with Retry-After
}

// New starts a fake; it stops when the test ends.
func New(t testing.TB) *Server {
	s := &Server{t: t, wake: make(chan struct{}, 1), conns: map[*websocket.Conn]bool{}, acks: map[string]Ack{}, nextTS: 1, shared: map[string]SharedFile{},
		pushedAt: map[string]time.Time{}, slashes: map[string]*slash{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.api)
	mux.HandleFunc("/ws", s.socket)
	mux.HandleFunc("/upload/", s.uploadFile)
	mux.HandleFunc("GET /files-pri/{id}/{name}", s.sharedFile)
	mux.HandleFunc("POST /commands/{trigger}", s.respond)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	t.Cleanup(func() {
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
	return s
}

// APIBase is the Web API base to configure.
func (s *Server) APIBase() string { return s.URL + "/api/" }

func (s *Server) api(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	_ = r.ParseForm()
	auth := r.Header.Get("Authorization")
	w.Header().Set("Content-Type", "application/json")
	reply := func(v map[string]any) {
		if _, ok := v["ok"]; !ok {
			v["ok"] = true
		}
		_ = json.NewEncoder(w).Encode(v)
	}
	fail := func(code string) { reply(map[string]any{"ok": false, "error": code}) }
	if method == "apps.connections.open" {
		if auth != "Bearer "+AppToken {
			fail("invalid_auth")
			return
		}
	} else if auth != "Bearer "+BotToken && r.FormValue("token") != BotToken {
		fail("invalid_auth")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch method {
	case "auth.test":
		reply(map[string]any{"user_id": BotUserID, "bot_id": "BBOT", "user": "nanobot", "team": "Test", "team_id": "T1"})
	case "apps.connections.open":
		s.opens++
		if s.failOpens > 0 {
			s.failOpens--
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		reply(map[string]any{"url": "ws" + strings.TrimPrefix(s.URL, "http") + "/ws"})
	case "chat.postMessage":
		if len(s.postErrs) > 0 {
			e := s.postErrs[0]
			s.postErrs = s.postErrs[1:]
			if e.retryAfter > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(e.retryAfter))
				w.WriteHeader(http.StatusTooManyRequests)
				fail("ratelimited")
				return
			}
			fail(e.code)
			return
		}
		buttons, err := parseBlocks(r.FormValue("blocks"))
		if err != nil {
			fail("invalid_blocks")
			return
		}
		ts := s.ts()
		s.record(Sent{Channel: r.FormValue("channel"), TS: ts, ThreadTS: r.FormValue("thread_ts"), Text: r.FormValue("text"), Buttons: buttons})
		reply(map[string]any{"channel": r.FormValue("channel"), "ts": ts})
	case "chat.update":
		s.record(Sent{Channel: r.FormValue("channel"), TS: r.FormValue("ts"), Edit: true, Text: r.FormValue("text")})
		reply(map[string]any{"channel": r.FormValue("channel"), "ts": r.FormValue("ts"), "text": r.FormValue("text")})
	case "files.getUploadURLExternal":
		id := fmt.Sprintf("F%d", len(s.files)+1)
		s.files = append(s.files, File{Name: r.FormValue("filename")})
		reply(map[string]any{"upload_url": s.URL + "/upload/" + id, "file_id": id})
	case "files.completeUploadExternal":
		var files []struct{ ID, Title string }
		_ = json.Unmarshal([]byte(r.FormValue("files")), &files)
		for _, f := range files {
			if i, err := strconv.Atoi(strings.TrimPrefix(f.ID, "F")); err == nil && i >= 1 && i <= len(s.files) {
				s.files[i-1].Channel, s.files[i-1].ThreadTS = r.FormValue("channel_id"), r.FormValue("thread_ts")
				s.files[i-1].Title = f.Title
			}
		}
		reply(map[string]any{"files": files})
	case "views.publish":
		if code := s.publish(r); code != "" {
			fail(code)
			return
		}
		reply(map[string]any{"view": map[string]any{"id": "V1", "type": "home"}})
	case "reactions.add":
		s.reactions = append(s.reactions, Reaction{Channel: r.FormValue("channel"), TS: r.FormValue("timestamp"), Name: r.FormValue("name")})
		reply(map[string]any{})
	default:
		fail("unknown_method")
	}
}

func (s *Server) record(m Sent) {
	m.At = time.Now()
	m.Rendered = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(m.Text)
	s.sent = append(s.sent, m)
}

// ts returns a fresh message ts (caller holds mu).
func (s *Server) ts() string {
	s.nextTS++
	return fmt.Sprintf("1700000000.%06d", s.nextTS)
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) socket(w http.ResponseWriter, r *http.Request) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.conns[conn] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
		conn.Close()
	}()
	done := make(chan struct{})
	go func() { // reader: acknowledgements
		defer close(done)
		for {
			var ack struct {
				EnvelopeID string          `json:"envelope_id"`
				Payload    json.RawMessage `json:"payload"`
			}
			if err := conn.ReadJSON(&ack); err != nil {
				return
			}
			s.mu.Lock()
			s.acks[ack.EnvelopeID] = Ack{Payload: ack.Payload, At: time.Now(), After: time.Since(s.pushedAt[ack.EnvelopeID])}
			s.mu.Unlock()
		}
	}()
	if conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","num_connections":1,"connection_info":{"app_id":"A1"},"debug_info":{"host":"fakeslack"}}`)) != nil {
		return
	}
	ping := time.NewTicker(100 * time.Millisecond)
	defer ping.Stop()
	for {
		s.mu.Lock()
		batch := s.pending
		s.pending = nil
		s.mu.Unlock()
		for i, env := range batch {
			if conn.WriteMessage(websocket.TextMessage, []byte(env)) != nil {
				s.mu.Lock()
				s.pending = append(batch[i:], s.pending...)
				s.mu.Unlock()
				return
			}
		}
		select {
		case <-done:
			return
		case <-s.wake:
		case <-ping.C:
			if conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second)) != nil {
				return
			}
		}
	}
}

// sharedFile serves a file a user shared, to the bot token only.
func (s *Server) sharedFile(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.fileGets++
	f, ok := s.shared[r.PathValue("id")]
	s.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+BotToken {
		http.Error(w, "not authorised", http.StatusForbidden)
		return
	}
	if !ok || f.Name != r.PathValue("name") {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", f.Mimetype)
	_, _ = w.Write(f.Data)
}

// FileGets returns how many shared-file downloads were asked for.
func (s *Server) FileGets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fileGets
}

func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request) {
	i, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/upload/F"))
	f, _, err := r.FormFile("file")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	data, _ := io.ReadAll(f)
	s.mu.Lock()
	if i >= 1 && i <= len(s.files) {
		s.files[i-1].Data = data
	}
	s.mu.Unlock()
	_, _ = w.Write([]byte("OK"))
}

// Files returns the uploads, in order.
func (s *Server) Files() []File {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]File(nil), s.files...)
}

// PushRaw queues a raw Socket Mode frame.
func (s *Server) PushRaw(frame string) {
	var env struct {
		EnvelopeID string `json:"envelope_id"`
	}
	_ = json.Unmarshal([]byte(frame), &env)
	s.mu.Lock()
	if env.EnvelopeID != "" {
		s.pushedAt[env.EnvelopeID] = time.Now()
	}
	s.pending = append(s.pending, frame)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Event describes a message event to push.
type Event struct {
	// Type is "message" (default) or "app_mention".
	Type        string
	Channel     string
	ChannelType string // "im", "channel", ... (message events only)
	User        string
	Text        string
	ThreadTS    string
	BotID       string
	// Files are shared with the message (subtype file_share); the fake
	// serves them at url_private_download to the bot token only.
	Files []SharedFile
}

// SharedFile is a file a user shares.
type SharedFile struct {
	Name, Mimetype string
	Data           []byte
	// Size is what the event reports (0 = len(Data)).
	Size int
	// URL overrides the url_private_download the fake would give.
	URL string
}

// Push queues an events_api envelope carrying e and returns its envelope
// id and the message's ts.
func (s *Server) Push(e Event) (envelopeID, ts string) {
	s.mu.Lock()
	ts = s.ts()
	s.nextEnv++
	envelopeID = fmt.Sprintf("env-%d", s.nextEnv)
	s.mu.Unlock()
	return envelopeID, s.PushAs(envelopeID, ts, e)
}

// PushAs queues e with a given envelope id and ts (a redelivery).
func (s *Server) PushAs(envelopeID, ts string, e Event) string {
	if e.Type == "" {
		e.Type = "message"
	}
	ev := map[string]any{"type": e.Type, "channel": e.Channel, "user": e.User, "text": e.Text, "ts": ts, "event_ts": ts}
	if e.ChannelType != "" && e.Type == "message" {
		ev["channel_type"] = e.ChannelType
	}
	if e.ThreadTS != "" {
		ev["thread_ts"] = e.ThreadTS
	}
	if e.BotID != "" {
		ev["bot_id"] = e.BotID
	}
	if len(e.Files) > 0 {
		ev["subtype"] = "file_share"
		var files []map[string]any
		s.mu.Lock()
		for _, f := range e.Files {
			s.nextFile++
			id := fmt.Sprintf("FS%d", s.nextFile)
			s.shared[id] = f
			size := f.Size
			if size == 0 {
				size = len(f.Data)
			}
			link := s.URL + "/files-pri/" + id + "/" + f.Name
			if f.URL != "" {
				link = f.URL
			}
			files = append(files, map[string]any{"id": id, "name": f.Name, "title": f.Name, "mimetype": f.Mimetype, "size": size, "url_private": link, "url_private_download": link})
		}
		s.mu.Unlock()
		ev["files"] = files
	}
	frame, _ := json.Marshal(map[string]any{
		"envelope_id": envelopeID, "type": "events_api", "accepts_response_payload": false, "retry_attempt": 0,
		"payload": map[string]any{
			"token": "verification", "team_id": "T1", "api_app_id": "A1", "type": "event_callback",
			"event_id": "Ev" + envelopeID, "event_time": time.Now().Unix(), "event": ev,
		},
	})
	s.PushRaw(string(frame))
	return ts
}

// Disconnect sends Slack's "disconnect" request (refresh_requested).
func (s *Server) Disconnect() {
	s.PushRaw(`{"type":"disconnect","reason":"refresh_requested","debug_info":{"host":"fakeslack"}}`)
}

// Drop closes every socket and fails the next two apps.connections.open.
func (s *Server) Drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failOpens = 2
	for c := range s.conns {
		c.Close()
	}
}

// FailPost makes the next chat.postMessage fail with a Slack error code;
// retryAfter > 0 answers HTTP 429 "ratelimited" with that Retry-After.
func (s *Server) FailPost(code string, retryAfter int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.postErrs = append(s.postErrs, apiErr{code: code, retryAfter: retryAfter})
}

// Acked reports whether the envelope was acknowledged.
func (s *Server) Acked(envelopeID string) bool {
	_, ok := s.AckOf(envelopeID)
	return ok
}

// Ack is an acknowledgement the app sent.
type Ack struct {
	// Payload is the ack's payload ("" or null when none): for a slash
	// command, the message Slack shows the asker.
	Payload json.RawMessage
	At      time.Time
	// After is how long after the envelope was queued the ack came.
	After time.Duration
}

// AckOf returns the acknowledgement of the envelope.
func (s *Server) AckOf(envelopeID string) (Ack, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.acks[envelopeID]
	return a, ok
}

// Sent returns the posts and updates received, in order.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// Reactions returns the reactions added, in order.
func (s *Server) Reactions() []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Reaction(nil), s.reactions...)
}

// Opens counts apps.connections.open calls.
func (s *Server) Opens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opens
}
