// Package qqtest is a local QQ open platform for tests, written from the
// QQ bot documentation (bot.q.qq.com/wiki): one httptest server that plays
// both hosts the adapter talks to.
//
//   - bots.qq.com: POST /app/getAppAccessToken checks appId/clientSecret and
//     issues tokens (expires_in as a string, as QQ sends it).
//   - api.sgroup.qq.com: GET /gateway/bot; POST /v2/users/{openid}/messages
//     and /v2/groups/{group_openid}/messages, which check the
//     "QQBot <token>" header, the msg_type and its body, that a msg_id names
//     a message of that chat, that each msg_seq per msg_id is new (a repeat
//     gets QQ's 40054005 "消息被去重") and at most five passive replies per
//     msg_id; POST /v2/{users|groups}/{id}/files (base64 file_data or url,
//     srv_send_msg false) returning a file_info that a msg_type 7 message
//     must use in the same chat; POST /dms/{guild_id}/messages.
//   - the gateway websocket: Hello (op 10) -> Identify (op 2, checked:
//     token, intents, shard) -> READY with a session_id, or Resume (op 6)
//     -> the missed dispatches replayed, then RESUMED; heartbeats (op 1,
//     checked: the seq is one the fake sent) answered with op 11; op 7
//     Reconnect and op 9 Invalid Session on demand.
//
// Dispatch sequence numbers grow across sessions, so Acked can tell
// whether the adapter has reported (heartbeat or Resume) a message's seq.
// Anything the adapter does against the protocol is recorded in Violations.
//
// Concurrency: a Server is safe for concurrent use by the code under test
// and the test: every method may be called from any goroutine, and the REST
// handlers and the gateway websocket run on the httptest server's goroutines
// under one lock. New calls t.Fatal, so it belongs to the goroutine running
// the test, and registers t.Cleanup to shut the server down.
package qqtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Credentials the fake accepts.
const (
	AppID  = "102034567"
	Secret = "fake-qq-app-secret-0123456789"
)

// Required intents: GROUP_AND_C2C_EVENT and DIRECT_MESSAGE.
const RequiredIntents = 1<<25 | 1<<12

// Kinds of chat.
const (
	C2C    = "C2C_MESSAGE_CREATE"
	Group  = "GROUP_AT_MESSAGE_CREATE"
	Direct = "DIRECT_MESSAGE_CREATE"
)

// Msg is a message a user writes to the bot.
type Msg struct {
	// Kind is C2C, Group or Direct (or another event name, such as
	// GROUP_MESSAGE_CREATE).
	Kind string
	// From is the author: user_openid (C2C), member_openid (groups), or
	// the author id (Direct).
	From string
	// Chat is the group_openid (groups) or guild_id (Direct).
	Chat    string
	Content string
	Bot     bool // the author is a bot
	// Attachments are served by the fake at their URL.
	Attachments []File
}

// File is an attachment the fake serves or a file the bot uploaded.
type File struct {
	Name        string
	ContentType string
	Data        []byte
}

// Sent is a message the bot sent.
type Sent struct {
	Kind     string // "users", "groups" or "dms"
	Target   string // openid, group_openid or guild_id
	ID       string // the id the fake gave it
	MsgType  int
	Content  string // the text, the markdown content, or "" for media
	FileInfo string // msg_type 7
	MsgID    string // the message it replies to ("" = active)
	MsgSeq   int
	At       time.Time
}

// Upload is a file the bot uploaded.
type Upload struct {
	Kind, Target string
	FileType     int
	Data         []byte // file_data decoded
	URL          string
	FileInfo     string
}

// Options tune the fake.
type Options struct {
	// HeartbeatInterval is what Hello announces (default 150 ms, so that
	// tests see heartbeats quickly).
	HeartbeatInterval time.Duration
}

// Server is the fake.
type Server struct {
	URL string // pass as both apiBase and authBase

	srv  *httptest.Server
	opts Options

	mu         sync.Mutex
	tokens     map[string]bool
	nextToken  int
	session    string // "" = none; Resume gets op 9
	conn       *websocket.Conn
	seq        int64
	log        []logged         // dispatches sent in the current session
	pending    [][]byte         // dispatches (without s) waiting for a ready socket
	seqOf      map[string]int64 // message id -> the seq it was dispatched with
	acked      int64            // highest seq reported by heartbeat or Resume
	nextID     int
	received   map[string]string // message id -> chat key ("users/openid")
	replySeqs  map[string][]int  // msg_id -> msg_seqs used
	fileInfos  map[string]string // file_info -> chat key
	files      map[string]File   // served under /files/
	sent       []Sent
	uploads    []Upload
	identifies int
	resumes    int
	heartbeats int
	violations []string
	fail       []failure
	closeNext  []int
}

type logged struct {
	seq  int64
	data []byte
}

type failure struct {
	status int
	body   string
}

// New starts a fake; it stops when the test ends.
func New(t testing.TB, opts ...Options) *Server {
	f := &Server{
		tokens: map[string]bool{}, received: map[string]string{}, replySeqs: map[string][]int{},
		fileInfos: map[string]string{}, files: map[string]File{}, seqOf: map[string]int64{}, nextID: 1000,
	}
	if len(opts) > 0 {
		f.opts = opts[0]
	}
	if f.opts.HeartbeatInterval <= 0 {
		f.opts.HeartbeatInterval = 150 * time.Millisecond
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /app/getAppAccessToken", f.token)
	mux.HandleFunc("GET /gateway/bot", f.gateway)
	mux.HandleFunc("GET /gateway", f.gateway)
	mux.HandleFunc("GET /websocket", f.ws)
	mux.HandleFunc("POST /v2/{kind}/{id}/messages", f.message)
	mux.HandleFunc("POST /v2/{kind}/{id}/files", f.upload)
	mux.HandleFunc("POST /dms/{guild}/messages", f.dms)
	mux.HandleFunc("GET /files/{name}", f.file)
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

// Send makes a user write a message, dispatches it (now, or when the bot's
// socket is ready again) and returns its message id.
func (f *Server) Send(m Msg) string {
	f.mu.Lock()
	f.nextID++
	id := fmt.Sprintf("ROBOT1.0_msg%d", f.nextID)
	d := map[string]any{"id": id, "content": m.Content, "timestamp": time.Now().Format(time.RFC3339)}
	author := map[string]any{}
	switch m.Kind {
	case Direct:
		author["id"], author["username"] = m.From, "user-"+m.From
		d["guild_id"], d["channel_id"], d["src_guild_id"] = m.Chat, "ch-"+m.Chat, "src-"+m.Chat
		f.received[id] = "dms/" + m.Chat
	case C2C:
		author["user_openid"] = m.From
		f.received[id] = "users/" + m.From
	default:
		author["member_openid"] = m.From
		d["group_openid"], d["group_id"] = m.Chat, m.Chat
		f.received[id] = "groups/" + m.Chat
	}
	if m.Bot {
		author["bot"] = true
	}
	d["author"] = author
	var atts []map[string]any
	for _, a := range m.Attachments {
		f.files[a.Name] = a
		atts = append(atts, map[string]any{"content_type": a.ContentType, "filename": a.Name, "size": len(a.Data), "url": f.URL + "/files/" + a.Name})
	}
	if atts != nil {
		d["attachments"] = atts
	}
	data, _ := json.Marshal(d)
	f.mu.Unlock()
	f.Dispatch(m.Kind, data)
	return id
}

// Dispatch sends an op 0 frame with event t and data d (raw JSON), now or
// once the bot's socket is ready again.
func (f *Server) Dispatch(t string, d []byte) {
	body, _ := json.Marshal(map[string]any{"op": 0, "t": t, "d": json.RawMessage(d)})
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn == nil {
		f.pending = append(f.pending, body)
		return
	}
	f.sendLocked(body)
}

// PushRaw writes raw text as a frame on the current socket (false when
// there is none).
func (f *Server) PushRaw(raw string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn == nil {
		return false
	}
	return f.writeLocked([]byte(raw)) == nil
}

// Drop closes the bot's socket abruptly; dispatches queue until it is back.
func (f *Server) Drop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn != nil {
		f.conn.CloseNow()
		f.conn = nil
	}
}

// Reconnect sends op 7 and stops dispatching on the socket; the bot must
// reconnect and Resume.
func (f *Server) Reconnect() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn != nil {
		_ = f.writeLocked([]byte(`{"op":7}`))
		f.conn = nil // the handler closes it once the bot went
	}
}

// InvalidateSession forgets the session and drops the socket: the bot's
// Resume gets op 9 and it must Identify afresh.
func (f *Server) InvalidateSession() {
	f.mu.Lock()
	f.session = ""
	f.mu.Unlock()
	f.Drop()
}

// CloseNext makes the gateway answer the next Identify or Resume by
// closing the socket with code (4004 invalid token, 4006 invalid session,
// 4914 bot offline, ...).
func (f *Server) CloseNext(code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closeNext = append(f.closeNext, code)
}

func (f *Server) closeNextLocked(conn *websocket.Conn) bool {
	if len(f.closeNext) == 0 {
		return false
	}
	code := f.closeNext[0]
	f.closeNext = f.closeNext[1:]
	conn.Close(websocket.StatusCode(code), "closed by the test")
	return true
}

// Tokens returns how many access tokens were issued.
func (f *Server) Tokens() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nextToken
}

// RevokeTokens makes every issued token invalid (REST answers 401).
func (f *Server) RevokeTokens() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokens = map[string]bool{}
}

// FailNext answers the next message sends with status and a QQ error
// body with code, once each.
func (f *Server) FailNext(n, status int, code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.fail = append(f.fail, failure{status, fmt.Sprintf(`{"code":%d,"message":"injected failure","err_code":%d,"trace_id":"t"}`, code, code)})
	}
}

// Acked reports whether the bot has reported the message's seq (in a
// heartbeat or a Resume) as handled.
func (f *Server) Acked(msgID string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	seq := f.seqOf[msgID]
	return seq > 0 && f.acked >= seq
}

// Ready reports whether a socket is identified or resumed.
func (f *Server) Ready() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conn != nil
}

// Sent returns the messages the bot sent, in order.
func (f *Server) Sent() []Sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Sent(nil), f.sent...)
}

// Uploads returns the files the bot uploaded.
func (f *Server) Uploads() []Upload {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Upload(nil), f.uploads...)
}

// Counts returns how often the bot identified, resumed and heartbeat.
func (f *Server) Counts() (identifies, resumes, heartbeats int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.identifies, f.resumes, f.heartbeats
}

// Violations lists what the bot did against the protocol.
func (f *Server) Violations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.violations...)
}

func (f *Server) violate(format string, args ...any) {
	f.violations = append(f.violations, fmt.Sprintf(format, args...))
}
