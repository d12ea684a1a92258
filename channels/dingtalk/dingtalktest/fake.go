// Package dingtalktest is a local fake of DingTalk's stream mode and robot
// REST API for tests: an httptest server with the gateway's
// connections/open endpoint, the stream websocket (JSON frames, SYSTEM ping
// and disconnect, CALLBACK bot messages), the OAuth2 token endpoint, the
// group and one-to-one send endpoints and the message file download. It
// checks what the adapter sends: the credentials and ticket, every ack
// (code 200 and the frame's messageId) and the access token header on
// every REST call; violations fail the test.
package dingtalktest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Credentials the fake accepts.
const (
	ClientID     = "dingclient123"
	ClientSecret = "dingsecret-very-secret"
	BotUserID    = "$:LWCP_v1:$bot"
)

// User is a DingTalk user.
type User struct {
	StaffID string
	Nick    string
}

// Msg is a bot message the fake delivers.
type Msg struct {
	From           User
	ConversationID string
	Group          bool
	AtBot          bool
	Text           string
	// MsgType and Content override the text message (picture, file, ...).
	MsgType string
	Content map[string]any
}

// SentMsg is a message the adapter sent.
type SentMsg struct {
	// Chat is the openConversationId (group) or the user id (direct).
	Chat  string
	Group bool
	Key   string // processQueryKey returned
	Title string
	Text  string
	At    time.Time
}

// Server is the fake.
type Server struct {
	URL string
	t   testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	ws       *websocket.Conn
	wsCtx    context.Context
	tickets  map[string]bool
	pending  []string // frames waiting for a connection
	acked    map[string]int
	pings    map[string]string // ping frame id -> data
	pongs    map[string]bool
	sent     []SentMsg
	token    string
	tokens   int
	opens    int
	failNext int // REST calls to fail with this status
	files    map[string][]byte
	seq      int
	conns    int
}

// New starts a fake; it stops when the test ends.
func New(t testing.TB) *Server {
	s := &Server{t: t, tickets: map[string]bool{}, acked: map[string]int{}, pings: map[string]string{}, pongs: map[string]bool{}, files: map[string][]byte{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1.0/gateway/connections/open", s.open)
	mux.HandleFunc("GET /stream", s.stream)
	mux.HandleFunc("POST /v1.0/oauth2/accessToken", s.accessToken)
	mux.HandleFunc("POST /v1.0/robot/groupMessages/send", s.send(true))
	mux.HandleFunc("POST /v1.0/robot/oToMessages/batchSend", s.send(false))
	mux.HandleFunc("POST /v1.0/robot/messageFiles/download", s.download)
	mux.HandleFunc("GET /files/{code}", s.file)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	t.Cleanup(func() {
		s.mu.Lock()
		if s.ws != nil {
			_ = s.ws.CloseNow()
		}
		s.mu.Unlock()
		s.srv.Close()
	})
	return s
}

func (s *Server) errorf(format string, args ...any) {
	s.t.Errorf("dingtalktest: "+format, args...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func decode(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func (s *Server) open(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ClientID      string `json:"clientId"`
		ClientSecret  string `json:"clientSecret"`
		Subscriptions []struct {
			Type, Topic string
		} `json:"subscriptions"`
	}
	if err := decode(r, &req); err != nil {
		writeJSON(w, 400, map[string]string{"code": "InvalidParameter", "message": err.Error()})
		return
	}
	if req.ClientID != ClientID || req.ClientSecret != ClientSecret {
		writeJSON(w, 401, map[string]string{"code": "InvalidAuthentication", "message": "bad client credentials"})
		return
	}
	ok := false
	for _, sub := range req.Subscriptions {
		ok = ok || (sub.Type == "CALLBACK" && sub.Topic == "/v1.0/im/bot/messages/get")
	}
	if !ok {
		s.errorf("connections/open without the bot message subscription: %+v", req.Subscriptions)
	}
	s.mu.Lock()
	s.opens++
	ticket := fmt.Sprintf("ticket-%d", s.opens)
	s.tickets[ticket] = true
	s.mu.Unlock()
	writeJSON(w, 200, map[string]string{"endpoint": "ws" + strings.TrimPrefix(s.URL, "http") + "/stream", "ticket": ticket})
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	s.mu.Lock()
	valid := s.tickets[ticket]
	delete(s.tickets, ticket) // one use
	s.mu.Unlock()
	if !valid {
		http.Error(w, "bad ticket", http.StatusForbidden)
		return
	}
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	ctx := r.Context()
	s.mu.Lock()
	if s.ws != nil {
		_ = s.ws.CloseNow()
	}
	s.ws, s.wsCtx = ws, ctx
	s.conns++
	pending := s.pending
	s.pending = nil
	s.mu.Unlock()
	for _, p := range pending {
		_ = ws.Write(ctx, websocket.MessageText, []byte(p))
	}
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			s.mu.Lock()
			if s.ws == ws {
				s.ws = nil
			}
			s.mu.Unlock()
			return
		}
		var a struct {
			Code    int               `json:"code"`
			Headers map[string]string `json:"headers"`
			Message string            `json:"message"`
			Data    string            `json:"data"`
		}
		if err := json.Unmarshal(data, &a); err != nil {
			s.errorf("the adapter sent a frame that is not JSON: %q", data)
			continue
		}
		id := a.Headers["messageId"]
		if id == "" {
			s.errorf("ack without headers.messageId: %s", data)
			continue
		}
		s.mu.Lock()
		if want, ok := s.pings[id]; ok {
			if a.Code != 200 || a.Data != want {
				s.errorf("ping %s answered with code %d data %q, want 200 and %q", id, a.Code, a.Data, want)
			}
			s.pongs[id] = true
		}
		s.acked[id] = a.Code
		s.mu.Unlock()
	}
}

// push writes a frame to the current connection, or queues it until the
// adapter connects.
func (s *Server) push(f map[string]any) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	id := fmt.Sprintf("frame-%d", s.seq)
	h := f["headers"].(map[string]string)
	h["messageId"] = id
	h["time"] = fmt.Sprint(time.Now().UnixMilli())
	f["specVersion"] = "1.0"
	b, _ := json.Marshal(f)
	if s.ws == nil || s.ws.Write(s.wsCtx, websocket.MessageText, b) != nil {
		s.pending = append(s.pending, string(b))
	}
	return id
}

// Deliver sends a bot message; it returns the frame id and the msgId.
func (s *Server) Deliver(m Msg) (frameID, msgID string) {
	s.mu.Lock()
	msgID = fmt.Sprintf("msg%d", s.seq+1000)
	s.mu.Unlock()
	data := map[string]any{
		"msgId": msgID, "conversationId": m.ConversationID, "conversationType": "1",
		"senderStaffId": m.From.StaffID, "senderId": "$:LWCP_v1:$" + m.From.StaffID, "senderNick": m.From.Nick,
		"chatbotUserId": BotUserID, "robotCode": ClientID, "msgtype": "text",
		"text": map[string]string{"content": m.Text}, "isInAtList": m.AtBot, "createAt": time.Now().UnixMilli(),
	}
	if m.Group {
		data["conversationType"] = "2"
		data["conversationTitle"] = "team"
	}
	if m.MsgType != "" {
		data["msgtype"] = m.MsgType
		delete(data, "text")
		data["content"] = m.Content
	}
	b, _ := json.Marshal(data)
	frameID = s.push(map[string]any{"type": "CALLBACK", "headers": map[string]string{"topic": "/v1.0/im/bot/messages/get", "contentType": "application/json"}, "data": string(b)})
	return frameID, msgID
}

// DeliverRaw sends a bot-message frame with the given data string.
func (s *Server) DeliverRaw(data string) string {
	return s.push(map[string]any{"type": "CALLBACK", "headers": map[string]string{"topic": "/v1.0/im/bot/messages/get", "contentType": "application/json"}, "data": data})
}

// Ping sends a SYSTEM ping and returns its frame id.
func (s *Server) Ping(data string) string {
	id := s.push(map[string]any{"type": "SYSTEM", "headers": map[string]string{"topic": "ping", "contentType": "application/json"}, "data": data})
	s.mu.Lock()
	s.pings[id] = data
	s.mu.Unlock()
	return id
}

// Disconnect sends a SYSTEM disconnect frame.
func (s *Server) Disconnect() string {
	return s.push(map[string]any{"type": "SYSTEM", "headers": map[string]string{"topic": "disconnect", "contentType": "application/json"}, "data": `{"reason":"server restart"}`})
}

// Event sends an EVENT frame on a topic the adapter did not subscribe to.
func (s *Server) Event(topic string) string {
	return s.push(map[string]any{"type": "EVENT", "headers": map[string]string{"topic": topic, "contentType": "application/json"}, "data": "{}"})
}

// Drop closes the stream connection.
func (s *Server) Drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ws != nil {
		_ = s.ws.CloseNow()
		s.ws = nil
	}
}

// Acked reports the ack code for a frame (0 = not acked).
func (s *Server) Acked(frameID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acked[frameID]
}

// Ponged reports whether a ping was answered correctly.
func (s *Server) Ponged(frameID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pongs[frameID]
}

// Counts returns how many connections were opened, dialed and tokens issued.
func (s *Server) Counts() (opens, conns, tokens int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opens, s.conns, s.tokens
}

// Sent returns what the adapter sent, in order.
func (s *Server) Sent() []SentMsg {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SentMsg(nil), s.sent...)
}

// FailNext makes the next REST send fail with status.
func (s *Server) FailNext(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext = status
}

// ExpireToken makes the current access token invalid (401 on next use).
func (s *Server) ExpireToken() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = "expired"
}

// AddFile registers a file for a download code.
func (s *Server) AddFile(code string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[code] = data
}

func (s *Server) accessToken(w http.ResponseWriter, r *http.Request) {
	var req struct{ AppKey, AppSecret string }
	if err := decode(r, &req); err != nil || req.AppKey != ClientID || req.AppSecret != ClientSecret {
		writeJSON(w, 400, map[string]string{"code": "invalidClientIdOrSecret", "message": "invalid appKey or appSecret"})
		return
	}
	s.mu.Lock()
	s.tokens++
	s.token = fmt.Sprintf("access-token-%d", s.tokens)
	tok := s.token
	s.mu.Unlock()
	writeJSON(w, 200, map[string]any{"accessToken": tok, "expireIn": 7200})
}

// authorized checks the token header; it writes the error itself.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	tok, fail := s.token, s.failNext
	s.failNext = 0
	s.mu.Unlock()
	if got := r.Header.Get("x-acs-dingtalk-access-token"); got == "" || got != tok {
		writeJSON(w, 401, map[string]string{"code": "InvalidAuthentication", "message": "token invalid"})
		return false
	}
	if fail != 0 {
		writeJSON(w, fail, map[string]string{"code": "Forced", "message": "forced failure"})
		return false
	}
	return true
}

func (s *Server) send(group bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.authorized(w, r) {
			return
		}
		var req struct {
			RobotCode          string   `json:"robotCode"`
			OpenConversationID string   `json:"openConversationId"`
			UserIDs            []string `json:"userIds"`
			MsgKey             string   `json:"msgKey"`
			MsgParam           string   `json:"msgParam"`
		}
		if err := decode(r, &req); err != nil {
			writeJSON(w, 400, map[string]string{"code": "InvalidParameter", "message": "bad json"})
			return
		}
		var p struct{ Title, Text string }
		if req.RobotCode != ClientID || req.MsgKey != "sampleMarkdown" || json.Unmarshal([]byte(req.MsgParam), &p) != nil || p.Text == "" || p.Title == "" {
			s.errorf("bad send: %+v", req)
			writeJSON(w, 400, map[string]string{"code": "InvalidParameter", "message": "bad send"})
			return
		}
		chat := req.OpenConversationID
		if !group {
			if len(req.UserIDs) != 1 {
				s.errorf("batchSend to %v, want one user", req.UserIDs)
			}
			chat = strings.Join(req.UserIDs, ",")
		}
		if chat == "" {
			writeJSON(w, 400, map[string]string{"code": "InvalidParameter", "message": "no target"})
			return
		}
		s.mu.Lock()
		s.seq++
		key := fmt.Sprintf("pqk-%d", s.seq)
		s.sent = append(s.sent, SentMsg{Chat: chat, Group: group, Key: key, Title: p.Title, Text: p.Text, At: time.Now()})
		s.mu.Unlock()
		writeJSON(w, 200, map[string]any{"processQueryKey": key})
	}
}

func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	var req struct{ DownloadCode, RobotCode string }
	if err := decode(r, &req); err != nil || req.RobotCode != ClientID {
		writeJSON(w, 400, map[string]string{"code": "InvalidParameter", "message": "bad download request"})
		return
	}
	s.mu.Lock()
	_, ok := s.files[req.DownloadCode]
	s.mu.Unlock()
	if !ok {
		writeJSON(w, 404, map[string]string{"code": "NotFound", "message": "no such file"})
		return
	}
	writeJSON(w, 200, map[string]string{"downloadUrl": s.URL + "/files/" + req.DownloadCode})
}

func (s *Server) file(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	data, ok := s.files[r.PathValue("code")]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(data)
}
