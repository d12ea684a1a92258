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
package qqtest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
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

// ---- bots.qq.com ----

func (f *Server) token(w http.ResponseWriter, r *http.Request) {
	var in struct {
		AppID        string `json:"appId"`
		ClientSecret string `json:"clientSecret"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 100000, "message": "bad request body"})
		return
	}
	if in.AppID != AppID || in.ClientSecret != Secret {
		// QQ answers 200 with an error code.
		writeJSON(w, http.StatusOK, map[string]any{"code": 100016, "message": "invalid appid or secret"})
		return
	}
	f.mu.Lock()
	f.nextToken++
	tok := fmt.Sprintf("fake-access-token-%04d", f.nextToken)
	f.tokens[tok] = true
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "expires_in": "7200"})
}

// ---- REST ----

func (f *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "QQBot ")
	f.mu.Lock()
	valid := ok && f.tokens[tok]
	f.mu.Unlock()
	if !valid {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"code": 11244, "message": "token not exist or expire"})
	}
	return valid
}

func (f *Server) gateway(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(w, r) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"url": "ws" + strings.TrimPrefix(f.URL, "http") + "/websocket", "shards": 1,
		"session_start_limit": map[string]int{"total": 1000, "remaining": 999, "reset_after": 86400000, "max_concurrency": 1},
	})
}

func (f *Server) injected(w http.ResponseWriter) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.fail) == 0 {
		return false
	}
	fl := f.fail[0]
	f.fail = f.fail[1:]
	w.Header().Set("Content-Type", "application/json")
	if fl.status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(fl.status)
	fmt.Fprint(w, fl.body)
	return true
}

func qqError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{"code": code, "message": msg, "err_code": code, "trace_id": "fake"})
}

type messageBody struct {
	Content  string `json:"content"`
	MsgType  *int   `json:"msg_type"`
	Markdown *struct {
		Content string `json:"content"`
	} `json:"markdown"`
	Media *struct {
		FileInfo string `json:"file_info"`
	} `json:"media"`
	MsgID  string `json:"msg_id"`
	MsgSeq *int   `json:"msg_seq"`
}

func (f *Server) message(w http.ResponseWriter, r *http.Request) {
	kind, target := r.PathValue("kind"), r.PathValue("id")
	if kind != "users" && kind != "groups" {
		qqError(w, http.StatusNotFound, 404, "no such path")
		return
	}
	if !f.authorized(w, r) || f.injected(w) {
		return
	}
	var b messageBody
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
		qqError(w, http.StatusBadRequest, 40034001, "invalid json: "+err.Error())
		return
	}
	chat := kind + "/" + target
	s := Sent{Kind: kind, Target: target, MsgID: b.MsgID}
	switch {
	case b.MsgType == nil:
		qqError(w, http.StatusBadRequest, 40034002, "msg_type is required")
		return
	case *b.MsgType == 0 && strings.TrimSpace(b.Content) != "":
		s.Content = b.Content
	case *b.MsgType == 2 && b.Markdown != nil && strings.TrimSpace(b.Markdown.Content) != "":
		s.Content = b.Markdown.Content
	case *b.MsgType == 7 && b.Media != nil && b.Media.FileInfo != "":
		s.FileInfo, s.Content = b.Media.FileInfo, b.Content
	default:
		qqError(w, http.StatusBadRequest, 40034003, "message body does not match msg_type")
		return
	}
	s.MsgType = *b.MsgType
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.FileInfo != "" && f.fileInfos[s.FileInfo] != chat {
		qqError(w, http.StatusBadRequest, 40034004, "file_info was not uploaded to this chat")
		return
	}
	if b.MsgID != "" {
		if f.received[b.MsgID] != chat {
			qqError(w, http.StatusBadRequest, 40034006, "msg_id is not a message of this chat")
			return
		}
		seq := 1 // QQ's default
		if b.MsgSeq != nil {
			seq = *b.MsgSeq
		}
		used := f.replySeqs[b.MsgID]
		for _, u := range used {
			if u == seq {
				qqError(w, http.StatusBadRequest, 40054005, "消息被去重，请检查请求msgseq")
				return
			}
		}
		if len(used) >= 5 {
			qqError(w, http.StatusBadRequest, 40034024, "被动回复次数超过限制") // code chosen by the fake
			return
		}
		f.replySeqs[b.MsgID] = append(used, seq)
		s.MsgSeq = seq
	}
	f.nextID++
	s.ID, s.At = fmt.Sprintf("SENT%d", f.nextID), time.Now()
	f.sent = append(f.sent, s)
	writeJSON(w, http.StatusOK, map[string]any{"id": s.ID, "timestamp": s.At.Unix()})
}

func (f *Server) upload(w http.ResponseWriter, r *http.Request) {
	kind, target := r.PathValue("kind"), r.PathValue("id")
	if kind != "users" && kind != "groups" {
		qqError(w, http.StatusNotFound, 404, "no such path")
		return
	}
	if !f.authorized(w, r) {
		return
	}
	var b struct {
		FileType   int    `json:"file_type"`
		URL        string `json:"url"`
		FileData   string `json:"file_data"`
		SrvSendMsg *bool  `json:"srv_send_msg"`
	}
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
		qqError(w, http.StatusBadRequest, 40034001, "invalid json")
		return
	}
	up := Upload{Kind: kind, Target: target, FileType: b.FileType, URL: b.URL}
	switch {
	case b.FileType < 1 || b.FileType > 4:
		qqError(w, http.StatusBadRequest, 40034010, "file_type must be 1 to 4")
		return
	case (b.URL == "") == (b.FileData == ""):
		qqError(w, http.StatusBadRequest, 40034011, "give one of url and file_data")
		return
	case b.SrvSendMsg == nil || *b.SrvSendMsg:
		qqError(w, http.StatusBadRequest, 40034012, "this fake expects srv_send_msg false")
		return
	}
	if b.FileData != "" {
		data, err := base64.StdEncoding.DecodeString(b.FileData)
		if err != nil {
			qqError(w, http.StatusBadRequest, 40034013, "file_data is not base64")
			return
		}
		up.Data = data
	}
	f.mu.Lock()
	f.nextID++
	up.FileInfo = fmt.Sprintf("FILEINFO%d", f.nextID)
	f.fileInfos[up.FileInfo] = kind + "/" + target
	f.uploads = append(f.uploads, up)
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"file_uuid": "uuid-" + up.FileInfo, "file_info": up.FileInfo, "ttl": 3600})
}

func (f *Server) dms(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(w, r) || f.injected(w) {
		return
	}
	guild := r.PathValue("guild")
	var b struct {
		Content string `json:"content"`
		MsgID   string `json:"msg_id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil || strings.TrimSpace(b.Content) == "" {
		qqError(w, http.StatusBadRequest, 50006, "content is required")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if b.MsgID != "" && f.received[b.MsgID] != "dms/"+guild {
		qqError(w, http.StatusBadRequest, 40034006, "msg_id is not a message of this chat")
		return
	}
	f.nextID++
	s := Sent{Kind: "dms", Target: guild, ID: fmt.Sprintf("SENT%d", f.nextID), Content: b.Content, MsgID: b.MsgID, At: time.Now()}
	f.sent = append(f.sent, s)
	writeJSON(w, http.StatusOK, map[string]any{"id": s.ID, "guild_id": guild, "channel_id": "ch-" + guild, "content": b.Content})
}

func (f *Server) file(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	file, ok := f.files[r.PathValue("name")]
	f.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", file.ContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(file.Data)))
	w.Write(file.Data)
}

// ---- gateway ----

func (f *Server) ws(w http.ResponseWriter, r *http.Request) {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer conn.CloseNow()
	ctx := r.Context()
	hello, _ := json.Marshal(map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": f.opts.HeartbeatInterval.Milliseconds()}})
	if err := write(ctx, conn, hello); err != nil {
		return
	}
	first, err := readFrame(ctx, conn, 10*time.Second)
	if err != nil {
		return
	}
	switch first.Op {
	case 2:
		if !f.identify(ctx, conn, first.D) {
			return
		}
	case 6:
		if !f.resume(ctx, conn, first.D) {
			return
		}
	default:
		f.mu.Lock()
		f.violate("first frame after Hello was op %d, want Identify or Resume", first.Op)
		f.mu.Unlock()
		conn.Close(4001, "invalid opcode")
		return
	}
	for {
		fr, err := readFrame(ctx, conn, 0)
		if err != nil {
			f.mu.Lock()
			if f.conn == conn {
				f.conn = nil
			}
			f.mu.Unlock()
			return
		}
		if fr.Op != 1 {
			f.mu.Lock()
			f.violate("unexpected op %d on an open session", fr.Op)
			f.mu.Unlock()
			continue
		}
		var seq *int64
		if err := json.Unmarshal(fr.D, &seq); err != nil {
			f.mu.Lock()
			f.violate("heartbeat d %s is not a seq or null", fr.D)
			f.mu.Unlock()
			conn.Close(4002, "invalid payload")
			return
		}
		f.mu.Lock()
		f.heartbeats++
		if seq != nil {
			if *seq > f.seq {
				f.violate("heartbeat reports seq %d, beyond the last sent %d", *seq, f.seq)
			} else if *seq > f.acked {
				f.acked = *seq
			}
		}
		f.mu.Unlock()
		if err := write(ctx, conn, []byte(`{"op":11}`)); err != nil {
			return
		}
	}
}

type gwFrame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
}

// checkToken reports whether "QQBot <tok>" names a valid token.
func (f *Server) checkToken(token string) bool {
	tok, ok := strings.CutPrefix(token, "QQBot ")
	return ok && f.tokens[tok]
}

func (f *Server) identify(ctx context.Context, conn *websocket.Conn, raw json.RawMessage) bool {
	var d struct {
		Token   string `json:"token"`
		Intents int    `json:"intents"`
		Shard   []int  `json:"shard"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		conn.Close(4002, "invalid payload")
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.closeNextLocked(conn):
		return false
	case !f.checkToken(d.Token):
		conn.Close(4004, "invalid token")
		return false
	case d.Intents&RequiredIntents != RequiredIntents:
		f.violate("Identify with intents %#x, missing %#x", d.Intents, RequiredIntents&^d.Intents)
		conn.Close(4013, "invalid intent")
		return false
	case len(d.Shard) != 2 || d.Shard[0] != 0 || d.Shard[1] != 1:
		f.violate("Identify with shard %v, want [0 1]", d.Shard)
		conn.Close(4010, "invalid shard")
		return false
	}
	f.identifies++
	f.session = fmt.Sprintf("session-%d", f.identifies)
	f.log = nil
	f.replace(conn)
	ready, _ := json.Marshal(map[string]any{"op": 0, "t": "READY", "d": map[string]any{
		"version": 1, "session_id": f.session, "shard": []int{0, 1},
		"user": map[string]any{"id": "bot-user-1", "username": "nanobot-test", "bot": true},
	}})
	f.sendLocked(ready)
	f.flushLocked()
	return true
}

func (f *Server) resume(ctx context.Context, conn *websocket.Conn, raw json.RawMessage) bool {
	var d struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		conn.Close(4002, "invalid payload")
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closeNextLocked(conn) {
		return false
	}
	if !f.checkToken(d.Token) {
		conn.Close(4004, "invalid token")
		return false
	}
	if f.session == "" || d.SessionID != f.session {
		_ = write(ctx, conn, []byte(`{"op":9,"d":false}`))
		conn.Close(websocket.StatusNormalClosure, "invalid session")
		return false
	}
	if d.Seq > f.seq {
		f.violate("Resume with seq %d beyond the last sent %d", d.Seq, f.seq)
		conn.Close(4007, "invalid seq")
		return false
	}
	f.resumes++
	if d.Seq > f.acked {
		f.acked = d.Seq
	}
	f.replace(conn)
	for _, l := range f.log {
		if l.seq > d.Seq {
			_ = f.writeLocked(l.data)
		}
	}
	f.sendLocked([]byte(`{"op":0,"t":"RESUMED","d":""}`))
	f.flushLocked()
	return true
}

// replace makes conn the bot's socket, closing an older one.
func (f *Server) replace(conn *websocket.Conn) {
	if f.conn != nil && f.conn != conn {
		f.conn.CloseNow()
	}
	f.conn = conn
}

// sendLocked gives a dispatch frame the next seq, logs and writes it.
func (f *Server) sendLocked(body []byte) int64 {
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	f.seq++
	m["s"] = f.seq
	if d, ok := m["d"].(map[string]any); ok {
		if id, ok := d["id"].(string); ok {
			f.seqOf[id] = f.seq
		}
	}
	data, _ := json.Marshal(m)
	f.log = append(f.log, logged{f.seq, data})
	_ = f.writeLocked(data)
	return f.seq
}

func (f *Server) flushLocked() {
	p := f.pending
	f.pending = nil
	for _, body := range p {
		f.sendLocked(body)
	}
}

func (f *Server) writeLocked(data []byte) error {
	if f.conn == nil {
		return fmt.Errorf("no socket")
	}
	return write(context.Background(), f.conn, data)
}

func write(ctx context.Context, conn *websocket.Conn, data []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return conn.Write(ctx, websocket.MessageText, data)
}

func readFrame(ctx context.Context, conn *websocket.Conn, timeout time.Duration) (gwFrame, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	_, data, err := conn.Read(ctx)
	if err != nil {
		return gwFrame{}, err
	}
	var fr gwFrame
	if err := json.Unmarshal(data, &fr); err != nil {
		return gwFrame{}, err
	}
	return fr, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
