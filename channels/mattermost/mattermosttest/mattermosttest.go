// Package mattermosttest is a local Mattermost server for tests, written
// from the Mattermost API v4 reference (api.mattermost.com): one httptest
// server with the REST endpoints the adapter uses and the websocket event
// stream.
//
//   - REST: every call needs "Authorization: Bearer <Token>" (else 401 with
//     Mattermost's error body). GET /api/v4/users/me; POST /api/v4/posts
//     (channel_id, message of at most 16383 characters, root_id naming a post
//     of that channel, file_ids uploaded to that channel); PUT
//     /api/v4/posts/{id}/patch (only the bot's own posts); POST
//     /api/v4/files (multipart: a channel_id field and "files" parts) and
//     GET /api/v4/files/{id}.
//   - GET /api/v4/websocket: the client's first frame must be the
//     authentication_challenge action with the token (answered status OK, or
//     FAIL and closed); a new connection then gets a "hello" event (seq 0)
//     carrying its connection_id. Every event has the next seq. Events the
//     test emits while no socket is up are kept; a client that reconnects
//     with ?connection_id=<id>&sequence_number=<n> of the last connection
//     gets the events from n on and no hello (Mattermost's reliable
//     websockets), a client that does not gets a new connection (and loses
//     them, as with the real server). The "ping" action is answered with
//     {"text":"pong"}; "user_typing" is recorded.
//
// Anything the client does against the protocol is recorded in Violations.
//
// Concurrency: a Server is safe for concurrent use by the code under test
// and the test: every method may be called from any goroutine, and the REST
// handlers and the websockets run on the httptest server's goroutines under
// one lock. New registers t.Cleanup to shut it down.
package mattermosttest

import (
	"context"
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
	"unicode/utf8"

	"github.com/coder/websocket"
)

// Token is the bot's personal access token the fake accepts.
const Token = "mm-fake-bot-token-4xq9zk3o1b"

// User is a Mattermost user.
type User struct {
	ID       string
	Username string
	Bot      bool
}

// Bot is the bot account the token belongs to.
var Bot = User{ID: "botuserid00000000000000001", Username: "nanobot", Bot: true}

// MaxPostRunes is Mattermost's post length limit.
const MaxPostRunes = 16383

// Msg is a post a user writes.
type Msg struct {
	From User
	// ChannelID is the channel; ChannelType is "D" (direct), "O" (public),
	// "P" (private) or "G" (group message).
	ChannelID   string
	ChannelType string
	Message     string
	RootID      string
	// Mentions are user ids the server reports as mentioned.
	Mentions []string
	// Files are attached to the post.
	Files []File
	// Type is the post type ("" for a user's post, "system_join_channel"...).
	Type string
}

// File is an attachment.
type File struct {
	Name     string
	MIMEType string
	Data     []byte
}

// Sent is a post the bot created or patched.
type Sent struct {
	PostID    string
	ChannelID string
	RootID    string
	Message   string
	FileIDs   []string
	Edit      bool
	At        time.Time
}

// Typing is a user_typing action the bot sent.
type Typing struct {
	ChannelID string
	ParentID  string
}

// Server is the fake.
type Server struct {
	URL string

	srv *httptest.Server

	mu         sync.Mutex
	nextID     int
	conn       *websocket.Conn // the authenticated socket, if any
	connID     string          // the current connection id
	log        []logged        // events of connID by seq (log[0] is hello)
	sentSeq    int             // next seq to write on the socket
	posts      map[string]postRec
	files      map[string]fileRec
	sent       []Sent
	typing     []Typing
	downloads  int
	connects   int
	resumes    int
	violations []string
	fail       []int
	rateLimit  int
	mute       bool
}

type logged struct {
	event   string
	data    any
	channel string
}

type postRec struct {
	channel, user string
}

type fileRec struct {
	File
	channel string
}

// New starts a fake; it stops when the test ends.
func New(t testing.TB) *Server {
	f := &Server{posts: map[string]postRec{}, files: map[string]fileRec{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v4/users/me", f.auth(f.me))
	mux.HandleFunc("POST /api/v4/posts", f.auth(f.createPost))
	mux.HandleFunc("PUT /api/v4/posts/{id}/patch", f.auth(f.patchPost))
	mux.HandleFunc("POST /api/v4/files", f.auth(f.upload))
	mux.HandleFunc("GET /api/v4/files/{id}", f.auth(f.download))
	mux.HandleFunc("GET /api/v4/websocket", f.ws)
	f.srv = httptest.NewServer(mux)
	f.URL = f.srv.URL
	t.Cleanup(func() {
		f.mu.Lock()
		if f.conn != nil {
			f.conn.CloseNow()
			f.conn = nil
		}
		f.mu.Unlock()
		f.srv.CloseClientConnections()
		f.srv.Close()
	})
	return f
}

// ---- test controls ----

// Post makes a user write m; the "posted" event goes out now or once the
// bot's socket is back. It returns the post id.
func (f *Server) Post(m Msg) string {
	f.mu.Lock()
	id := f.newIDLocked("post")
	var fileIDs []string
	var infos []map[string]any
	for _, file := range m.Files {
		fid := f.newIDLocked("file")
		f.files[fid] = fileRec{File: file, channel: m.ChannelID}
		fileIDs = append(fileIDs, fid)
		infos = append(infos, map[string]any{"id": fid, "name": file.Name, "mime_type": file.MIMEType, "size": len(file.Data), "extension": strings.TrimPrefix(ext(file.Name), ".")})
	}
	f.posts[id] = postRec{channel: m.ChannelID, user: m.From.ID}
	post := map[string]any{
		"id": id, "create_at": time.Now().UnixMilli(), "user_id": m.From.ID, "channel_id": m.ChannelID,
		"root_id": m.RootID, "message": m.Message, "type": m.Type, "props": map[string]any{}, "file_ids": fileIDs,
	}
	if m.From.Bot {
		post["props"] = map[string]any{"from_bot": "true"}
	}
	if infos != nil {
		post["metadata"] = map[string]any{"files": infos}
	}
	postJSON, _ := json.Marshal(post)
	mentions := ""
	if len(m.Mentions) > 0 {
		b, _ := json.Marshal(m.Mentions)
		mentions = string(b)
	}
	data := map[string]any{
		"channel_type": m.ChannelType, "channel_name": m.ChannelID, "channel_display_name": m.ChannelID,
		"post": string(postJSON), "sender_name": "@" + m.From.Username, "team_id": "team1",
	}
	if mentions != "" {
		data["mentions"] = mentions
	}
	f.emitLocked("posted", data, m.ChannelID)
	f.mu.Unlock()
	return id
}

// PushRaw sends raw text as an event frame on the socket (false when
// there is none): malformed payloads.
func (f *Server) PushRaw(raw string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn == nil {
		return false
	}
	return f.conn.Write(context.Background(), websocket.MessageText, []byte(raw)) == nil
}

// PushEvent sends an event frame whose data is given raw (a "posted"
// whose post is not a JSON string ...).
func (f *Server) PushEvent(event, data string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.emitLocked(event, json.RawMessage(data), "")
}

// Drop closes the bot's socket abruptly; events queue for a resume.
func (f *Server) Drop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn != nil {
		f.conn.CloseNow()
		f.conn = nil
	}
}

// Mute makes the server stop answering actions (pings) on the current
// socket without closing it: a connection that died silently.
func (f *Server) Mute() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mute = true
}

// FailNext makes the next REST calls answer with these statuses.
func (f *Server) FailNext(status ...int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = append(f.fail, status...)
}

// RateLimit answers the next n REST calls with 429 and Retry-After: 2.
func (f *Server) RateLimit(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rateLimit = n
}

// Sent returns the bot's posts and patches in order.
func (f *Server) Sent() []Sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Sent(nil), f.sent...)
}

// Typings returns the user_typing actions received.
func (f *Server) Typings() []Typing {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Typing(nil), f.typing...)
}

// File returns a file the bot uploaded (or a user attached).
func (f *Server) File(id string) (File, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.files[id]
	return r.File, ok
}

// Downloads counts GET /files/{id}.
func (f *Server) Downloads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.downloads
}

// Counts returns how many sockets authenticated and how many of those
// resumed a connection.
func (f *Server) Counts() (connects, resumes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.connects, f.resumes
}

// Violations lists what the client did against the protocol.
func (f *Server) Violations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.violations...)
}

// ---- events ----

// emitLocked appends an event to the connection's log and writes it if the
// socket is up. Caller holds mu.
func (f *Server) emitLocked(event string, data any, channelID string) {
	if f.connID == "" {
		f.newConnLocked()
	}
	f.log = append(f.log, logged{event: event, data: data, channel: channelID})
	f.flushLocked()
}

// newConnLocked starts a connection's event log with its hello. Before the
// first client connected, the events emitted so far move to the new log (a
// test may emit before the bot is up); afterwards the old log is gone, as
// on the real server.
func (f *Server) newConnLocked() {
	var unseen []logged
	if f.connects <= 1 && f.sentSeq < len(f.log) {
		unseen = f.log[max(f.sentSeq, 1):]
	}
	f.connID = f.newIDLocked("conn")
	f.log = append([]logged{{event: "hello", data: map[string]any{"server_version": "10.5.0.fake", "connection_id": f.connID}}}, unseen...)
	f.sentSeq = 0
}

// flushLocked writes the logged events the socket has not seen.
func (f *Server) flushLocked() {
	for f.conn != nil && f.sentSeq < len(f.log) {
		e := f.log[f.sentSeq]
		user := ""
		if e.event == "hello" {
			user = Bot.ID
		}
		frame, _ := json.Marshal(map[string]any{
			"event": e.event, "data": e.data, "seq": f.sentSeq,
			"broadcast": map[string]any{"omit_users": nil, "user_id": user, "channel_id": e.channel, "team_id": ""},
		})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := f.conn.Write(ctx, websocket.MessageText, frame)
		cancel()
		if err != nil {
			f.conn.CloseNow()
			f.conn = nil
			return
		}
		f.sentSeq++
	}
}

func (f *Server) ws(w http.ResponseWriter, r *http.Request) {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer conn.CloseNow()
	ctx := r.Context()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, data, err := conn.Read(rctx)
	cancel()
	if err != nil {
		return
	}
	var a action
	if json.Unmarshal(data, &a) != nil || a.Action != "authentication_challenge" {
		f.violate("first frame is not the authentication_challenge action: %.200s", data)
		conn.Close(websocket.StatusPolicyViolation, "not authenticated")
		return
	}
	var tok struct {
		Token string `json:"token"`
	}
	_ = json.Unmarshal(a.Data, &tok)
	if tok.Token != Token {
		fail, _ := json.Marshal(map[string]any{"status": "FAIL", "seq_reply": a.Seq, "error": map[string]any{
			"id": "api.web_socket_router.not_authenticated.app_error", "message": "authentication failed", "status_code": 401,
		}})
		_ = conn.Write(ctx, websocket.MessageText, fail)
		conn.Close(websocket.StatusPolicyViolation, "authentication failed")
		return
	}
	f.mu.Lock()
	if f.conn != nil {
		f.conn.CloseNow()
	}
	f.connects++
	wantConn, wantSeq := r.URL.Query().Get("connection_id"), r.URL.Query().Get("sequence_number")
	n, seqErr := strconv.Atoi(wantSeq)
	resumed := wantConn != "" && wantConn == f.connID && seqErr == nil && n >= 1 && n <= len(f.log)
	if resumed {
		f.resumes++
		f.sentSeq = n
	} else {
		// A new connection: what the old one was sent is gone, as on the
		// real server.
		f.newConnLocked()
	}
	ok, _ := json.Marshal(map[string]any{"status": "OK", "seq_reply": a.Seq})
	if err := conn.Write(ctx, websocket.MessageText, ok); err != nil {
		f.mu.Unlock()
		return
	}
	f.conn = conn
	f.mute = false
	f.flushLocked()
	f.mu.Unlock()

	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			f.mu.Lock()
			if f.conn == conn {
				f.conn = nil
			}
			f.mu.Unlock()
			return
		}
		var a action
		if err := json.Unmarshal(data, &a); err != nil || a.Action == "" || a.Seq <= 0 {
			f.violate("malformed action %.200s", data)
			continue
		}
		reply := map[string]any{"status": "OK", "seq_reply": a.Seq}
		switch a.Action {
		case "ping":
			reply["data"] = map[string]any{"text": "pong", "version": "10.5.0.fake"}
		case "user_typing":
			var d struct {
				ChannelID string `json:"channel_id"`
				ParentID  string `json:"parent_id"`
			}
			if json.Unmarshal(a.Data, &d) != nil || d.ChannelID == "" {
				f.violate("user_typing without channel_id: %s", a.Data)
			}
			f.mu.Lock()
			f.typing = append(f.typing, Typing{ChannelID: d.ChannelID, ParentID: d.ParentID})
			f.mu.Unlock()
		default:
			f.violate("unknown action %q", a.Action)
			reply = map[string]any{"status": "FAIL", "seq_reply": a.Seq}
		}
		b, _ := json.Marshal(reply)
		f.mu.Lock()
		if f.conn == conn && !f.mute {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_ = conn.Write(ctx, websocket.MessageText, b)
			cancel()
		}
		f.mu.Unlock()
	}
}

type action struct {
	Seq    int64           `json:"seq"`
	Action string          `json:"action"`
	Data   json.RawMessage `json:"data"`
}

// ---- REST ----

func (f *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+Token {
			apiError(w, http.StatusUnauthorized, "api.context.session_expired.app_error", "Invalid or expired session, please login again.")
			return
		}
		f.mu.Lock()
		status := 0
		if f.rateLimit > 0 {
			f.rateLimit--
			status = http.StatusTooManyRequests
		} else if len(f.fail) > 0 {
			status, f.fail = f.fail[0], f.fail[1:]
		}
		f.mu.Unlock()
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "2")
			w.Header().Set("X-Ratelimit-Reset", "2")
		}
		if status != 0 {
			apiError(w, status, "fake.failure", "failure the test asked for")
			return
		}
		h(w, r)
	}
}

func (f *Server) me(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"id": Bot.ID, "username": Bot.Username, "is_bot": true, "roles": "system_user"})
}

func (f *Server) createPost(w http.ResponseWriter, r *http.Request) {
	var p struct {
		ChannelID string   `json:"channel_id"`
		Message   string   `json:"message"`
		RootID    string   `json:"root_id"`
		FileIDs   []string `json:"file_ids"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&p); err != nil {
		apiError(w, http.StatusBadRequest, "api.context.invalid_body_param.app_error", "invalid body: "+err.Error())
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case p.ChannelID == "":
		f.violateLocked("post without channel_id")
		apiError(w, http.StatusBadRequest, "api.context.invalid_body_param.app_error", "channel_id is required")
		return
	case utf8.RuneCountInString(p.Message) > MaxPostRunes:
		f.violateLocked("post of %d characters, over %d", utf8.RuneCountInString(p.Message), MaxPostRunes)
		apiError(w, http.StatusBadRequest, "model.post.is_valid.msg.app_error", "message too long")
		return
	case p.Message == "" && len(p.FileIDs) == 0:
		f.violateLocked("empty post")
		apiError(w, http.StatusBadRequest, "api.post.create_post.empty.app_error", "empty post")
		return
	}
	if p.RootID != "" {
		if root, ok := f.posts[p.RootID]; !ok || root.channel != p.ChannelID {
			f.violateLocked("root_id %s is not a post of channel %s", p.RootID, p.ChannelID)
			apiError(w, http.StatusBadRequest, "api.post.create_post.root_id.app_error", "invalid root_id")
			return
		}
	}
	for _, id := range p.FileIDs {
		if fr, ok := f.files[id]; !ok || fr.channel != p.ChannelID {
			f.violateLocked("file %s was not uploaded to channel %s", id, p.ChannelID)
			apiError(w, http.StatusBadRequest, "api.post.create_post.file_ids.app_error", "invalid file_ids")
			return
		}
	}
	id := f.newIDLocked("post")
	f.posts[id] = postRec{channel: p.ChannelID, user: Bot.ID}
	f.sent = append(f.sent, Sent{PostID: id, ChannelID: p.ChannelID, RootID: p.RootID, Message: p.Message, FileIDs: p.FileIDs, At: time.Now()})
	writeJSON(w, http.StatusCreated, map[string]any{"id": id, "channel_id": p.ChannelID, "root_id": p.RootID, "message": p.Message, "user_id": Bot.ID, "file_ids": p.FileIDs})
}

func (f *Server) patchPost(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var p struct {
		Message *string `json:"message"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&p); err != nil || p.Message == nil {
		apiError(w, http.StatusBadRequest, "api.context.invalid_body_param.app_error", "message is required")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	rec, ok := f.posts[id]
	switch {
	case !ok:
		apiError(w, http.StatusNotFound, "app.post.get.app_error", "post not found")
		return
	case rec.user != Bot.ID:
		f.violateLocked("patch of post %s, not the bot's", id)
		apiError(w, http.StatusForbidden, "api.context.permissions.app_error", "no permission")
		return
	case utf8.RuneCountInString(*p.Message) > MaxPostRunes:
		f.violateLocked("patch to %d characters, over %d", utf8.RuneCountInString(*p.Message), MaxPostRunes)
		apiError(w, http.StatusBadRequest, "model.post.is_valid.msg.app_error", "message too long")
		return
	}
	f.sent = append(f.sent, Sent{PostID: id, ChannelID: rec.channel, Message: *p.Message, Edit: true, At: time.Now()})
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "channel_id": rec.channel, "message": *p.Message, "user_id": Bot.ID})
}

func (f *Server) upload(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		f.violate("upload is not multipart: %v", err)
		apiError(w, http.StatusBadRequest, "api.file.upload_file.read_form_value.app_error", "not multipart")
		return
	}
	channel := r.FormValue("channel_id")
	parts := r.MultipartForm.File["files"]
	if channel == "" || len(parts) == 0 {
		f.violate("upload without channel_id or files")
		apiError(w, http.StatusBadRequest, "api.file.upload_file.incorrect_number_of_files.app_error", "channel_id and files required")
		return
	}
	var infos []map[string]any
	for _, fh := range parts {
		file, err := fh.Open()
		if err != nil {
			apiError(w, http.StatusBadRequest, "api.file.upload_file.read_request.app_error", err.Error())
			return
		}
		data, _ := io.ReadAll(file)
		file.Close()
		f.mu.Lock()
		id := f.newIDLocked("file")
		f.files[id] = fileRec{File: File{Name: fh.Filename, MIMEType: fh.Header.Get("Content-Type"), Data: data}, channel: channel}
		f.mu.Unlock()
		infos = append(infos, map[string]any{"id": id, "name": fh.Filename, "size": len(data), "mime_type": fh.Header.Get("Content-Type"), "channel_id": channel})
	}
	writeJSON(w, http.StatusCreated, map[string]any{"file_infos": infos, "client_ids": []string{}})
}

func (f *Server) download(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	rec, ok := f.files[r.PathValue("id")]
	f.downloads++
	f.mu.Unlock()
	if !ok {
		apiError(w, http.StatusNotFound, "app.file_info.get.app_error", "file not found")
		return
	}
	if rec.MIMEType != "" {
		w.Header().Set("Content-Type", rec.MIMEType)
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(rec.Data)))
	_, _ = w.Write(rec.Data)
}

// ---- helpers ----

func (f *Server) newIDLocked(kind string) string {
	f.nextID++
	return fmt.Sprintf("%s%022d", kind[:1], f.nextID)
}

func (f *Server) violate(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.violateLocked(format, args...)
}

func (f *Server) violateLocked(format string, args ...any) {
	f.violations = append(f.violations, fmt.Sprintf(format, args...))
}

func apiError(w http.ResponseWriter, status int, id, msg string) {
	writeJSON(w, status, map[string]any{"id": id, "message": msg, "detailed_error": "", "request_id": "req1", "status_code": status})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func ext(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i:]
	}
	return ""
}
