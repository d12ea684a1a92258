// Package dingtalktest is a local DingTalk for tests: the stream gateway
// (connections/open, a one-time ticket, a websocket speaking stream-mode
// JSON frames) and the robot REST APIs the dingtalk channel uses. It checks
// what the adapter sends — credentials, the access token header, the
// robotCode, every frame's acknowledgement — and records protocol errors.
//
// Concurrency: a Server is safe for concurrent use by the code under test
// and the test: every method may be called from any goroutine, and the REST
// handlers and the stream websocket run on the httptest server's goroutines
// under one lock. New registers t.Cleanup to shut it down.
package dingtalktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Credentials the fake accepts.
const (
	ClientID     = "dingexampleclientid"
	ClientSecret = "Sx9-secret-value-1234567890"
	topic        = "/v1.0/im/bot/messages/get"
)

// Sent is a message the robot sent.
type Sent struct {
	Group            bool
	Conversation, To string
	Title, Text      string
	ProcessQueryKey  string
	At               time.Time
}

// Message is what a user writes to the robot.
type Message struct {
	From, Nick string
	// Group is the group conversation id ("" = one-to-one).
	Group string
	Text  string
	// AtBot marks a group message that @-mentions the robot.
	AtBot bool
	// Type and Content replace the text message ("picture", {"downloadCode":…}).
	Type    string
	Content any
}

// Server is the fake.
type Server struct {
	URL string
	srv *httptest.Server

	mu         sync.Mutex
	tickets    map[string]bool
	conns      []*websocket.Conn
	acks       map[string]ack
	sent       []Sent
	token      string
	files      map[string][]byte
	next       int
	violations []string
	opens      int
	pings      map[string]string // ping messageId -> opaque data
	queue      [][]byte          // frames waiting for a connection
}

type ack struct {
	Code    int               `json:"code"`
	Headers map[string]string `json:"headers"`
	Message string            `json:"message"`
	Data    string            `json:"data"`
}

// New starts the fake; it stops with the test.
func New(t testing.TB) *Server {
	s := &Server{tickets: map[string]bool{}, acks: map[string]ack{}, files: map[string][]byte{}, pings: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1.0/gateway/connections/open", s.open)
	mux.HandleFunc("GET /stream", s.stream)
	mux.HandleFunc("POST /v1.0/oauth2/accessToken", s.accessToken)
	mux.HandleFunc("POST /v1.0/robot/groupMessages/send", s.authed(s.groupSend))
	mux.HandleFunc("POST /v1.0/robot/oToMessages/batchSend", s.authed(s.batchSend))
	mux.HandleFunc("POST /v1.0/robot/messageFiles/download", s.authed(s.download))
	mux.HandleFunc("GET /files/{code}", s.file)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	t.Cleanup(func() {
		s.mu.Lock()
		for _, c := range s.conns {
			c.CloseNow()
		}
		s.mu.Unlock()
		s.srv.Close()
	})
	return s
}

func (s *Server) violate(format string, args ...any) {
	s.mu.Lock()
	s.violations = append(s.violations, fmt.Sprintf(format, args...))
	s.mu.Unlock()
}

// Violations lists what the adapter did against the protocol.
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.violations)
}

func random() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) open(w http.ResponseWriter, r *http.Request) {
	var body struct {
		ClientID      string `json:"clientId"`
		ClientSecret  string `json:"clientSecret"`
		Subscriptions []struct {
			Type  string `json:"type"`
			Topic string `json:"topic"`
		} `json:"subscriptions"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		s.violate("connections/open: %v", err)
		writeJSON(w, 400, map[string]string{"code": "InvalidParameter", "message": "bad body"})
		return
	}
	if body.ClientID != ClientID || body.ClientSecret != ClientSecret {
		writeJSON(w, 401, map[string]string{"code": "InvalidAuthentication", "message": "clientId or clientSecret is wrong"})
		return
	}
	subscribed := slices.ContainsFunc(body.Subscriptions, func(x struct {
		Type  string `json:"type"`
		Topic string `json:"topic"`
	}) bool {
		return x.Type == "CALLBACK" && x.Topic == topic
	})
	if !subscribed {
		s.violate("connections/open: not subscribed to CALLBACK %s", topic)
	}
	ticket := random()
	s.mu.Lock()
	s.tickets[ticket] = true
	s.opens++
	s.mu.Unlock()
	writeJSON(w, 200, map[string]string{"endpoint": "ws" + strings.TrimPrefix(s.URL, "http") + "/stream", "ticket": ticket})
}

// Opens is how many times the adapter asked for a stream endpoint.
func (s *Server) Opens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opens
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	s.mu.Lock()
	valid := s.tickets[ticket]
	delete(s.tickets, ticket) // one use
	s.mu.Unlock()
	if !valid {
		s.violate("stream: unknown or reused ticket")
		http.Error(w, "invalid ticket", http.StatusForbidden)
		return
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.conns = append(s.conns, conn)
	queued := s.queue
	s.queue = nil
	s.mu.Unlock()
	for _, b := range queued {
		s.write(b)
	}
	defer func() {
		s.mu.Lock()
		s.conns = slices.DeleteFunc(s.conns, func(c *websocket.Conn) bool { return c == conn })
		s.mu.Unlock()
	}()
	for {
		_, data, err := conn.Read(context.Background())
		if err != nil {
			return
		}
		var a ack
		if err := json.Unmarshal(data, &a); err != nil || a.Headers["messageId"] == "" {
			s.violate("stream: acknowledgement without messageId: %s", data)
			continue
		}
		id := a.Headers["messageId"]
		s.mu.Lock()
		if want, ok := s.pings[id]; ok && (a.Data != want || a.Code != 200) {
			s.violations = append(s.violations, fmt.Sprintf("ping %s answered with %d %q, want 200 and the same data", id, a.Code, a.Data))
		}
		s.acks[id] = a
		s.mu.Unlock()
	}
}

// live returns the newest connection.
func (s *Server) live() *websocket.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.conns) == 0 {
		return nil
	}
	return s.conns[len(s.conns)-1]
}

func (s *Server) push(typ, topic, data string) string {
	s.mu.Lock()
	s.next++
	id := fmt.Sprintf("frame-%d-%s", s.next, random()[:6])
	s.mu.Unlock()
	f := map[string]any{
		"specVersion": "1.0", "type": typ, "time": time.Now().UnixMilli(),
		"headers": map[string]any{"topic": topic, "messageId": id, "contentType": "application/json", "time": fmt.Sprint(time.Now().UnixMilli())},
		"data":    data,
	}
	b, _ := json.Marshal(f)
	s.write(b)
	return id
}

// write sends a frame on the live connection, or keeps it for the next.
func (s *Server) write(b []byte) {
	if c := s.live(); c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if c.Write(ctx, websocket.MessageText, b) == nil {
			return
		}
	}
	s.mu.Lock()
	s.queue = append(s.queue, b)
	s.mu.Unlock()
}

// Connected reports whether a stream connection is up.
func (s *Server) Connected() bool { return s.live() != nil }

// Send delivers a robot message; it returns the message id and the frame id.
func (s *Server) Send(m Message) (msgID, frameID string) {
	s.mu.Lock()
	s.next++
	msgID = fmt.Sprintf("msg%04d", s.next)
	s.mu.Unlock()
	data := map[string]any{
		"msgId": msgID, "senderStaffId": m.From, "senderId": "$:LWCP_v1:$" + m.From, "senderNick": m.Nick,
		"chatbotUserId": "$:LWCP_v1:$bot", "robotCode": ClientID, "createAt": time.Now().UnixMilli(),
		"conversationType": "1", "conversationId": "cid-dm-" + m.From, "isInAtList": true,
		"msgtype": "text", "text": map[string]string{"content": m.Text},
	}
	if m.Group != "" {
		data["conversationType"], data["conversationId"], data["isInAtList"] = "2", m.Group, m.AtBot
		data["conversationTitle"] = "group " + m.Group
	}
	if m.Type != "" {
		data["msgtype"], data["content"] = m.Type, m.Content
		delete(data, "text")
	}
	b, _ := json.Marshal(data)
	return msgID, s.push("CALLBACK", topic, string(b))
}

// SendRaw pushes a robot-message frame with raw data (malformed input).
func (s *Server) SendRaw(data string) string { return s.push("CALLBACK", topic, data) }

// Ping sends a SYSTEM ping; the adapter must echo its data.
func (s *Server) Ping() string {
	opaque := `{"opaque":"` + random() + `"}`
	id := s.push("SYSTEM", "ping", opaque)
	s.mu.Lock()
	s.pings[id] = opaque
	s.mu.Unlock()
	return id
}

// Disconnect sends a SYSTEM disconnect, as DingTalk does before it moves a
// client to another server.
func (s *Server) Disconnect() string {
	return s.push("SYSTEM", "disconnect", `{"reason":"server maintenance"}`)
}

// Drop closes the live connection without a word.
func (s *Server) Drop() {
	if c := s.live(); c != nil {
		c.CloseNow()
	}
}

// Acked returns the acknowledgement of a frame.
func (s *Server) Acked(frameID string) (code int, data string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.acks[frameID]
	return a.Code, a.Data, ok
}

func (s *Server) accessToken(w http.ResponseWriter, r *http.Request) {
	var body struct{ AppKey, AppSecret string }
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.AppKey != ClientID || body.AppSecret != ClientSecret {
		writeJSON(w, 400, map[string]string{"code": "invalidClientIdOrSecret", "message": "wrong appKey or appSecret"})
		return
	}
	s.mu.Lock()
	s.token = "tok-" + random()
	tok := s.token
	s.mu.Unlock()
	writeJSON(w, 200, map[string]any{"accessToken": tok, "expireIn": 7200})
}

type robotSend struct {
	RobotCode          string   `json:"robotCode"`
	OpenConversationID string   `json:"openConversationId"`
	UserIDs            []string `json:"userIds"`
	MsgKey             string   `json:"msgKey"`
	MsgParam           string   `json:"msgParam"`
}

func (s *Server) authed(h func(w http.ResponseWriter, r *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		ok := s.token != "" && r.Header.Get("x-acs-dingtalk-access-token") == s.token
		s.mu.Unlock()
		if !ok {
			writeJSON(w, 401, map[string]string{"code": "InvalidAuthentication", "message": "token is not valid"})
			return
		}
		h(w, r)
	}
}

func (s *Server) decodeSend(w http.ResponseWriter, r *http.Request) (robotSend, map[string]string, bool) {
	var body robotSend
	var param map[string]string
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		s.violate("%s: %v", r.URL.Path, err)
		writeJSON(w, 400, map[string]string{"code": "InvalidParameter", "message": "bad body"})
		return body, nil, false
	}
	if body.RobotCode != ClientID {
		s.violate("%s: robotCode %q", r.URL.Path, body.RobotCode)
	}
	if body.MsgKey != "sampleMarkdown" {
		s.violate("%s: msgKey %q, want sampleMarkdown", r.URL.Path, body.MsgKey)
	}
	if err := json.Unmarshal([]byte(body.MsgParam), &param); err != nil || param["text"] == "" || param["title"] == "" {
		s.violate("%s: msgParam must be a JSON string with title and text: %q", r.URL.Path, body.MsgParam)
		writeJSON(w, 400, map[string]string{"code": "InvalidParameter", "message": "msgParam"})
		return body, nil, false
	}
	return body, param, true
}

func (s *Server) record(w http.ResponseWriter, m Sent) {
	s.mu.Lock()
	s.next++
	m.ProcessQueryKey, m.At = fmt.Sprintf("pqk-%d", s.next), time.Now()
	s.sent = append(s.sent, m)
	s.mu.Unlock()
	writeJSON(w, 200, map[string]any{"processQueryKey": m.ProcessQueryKey})
}

func (s *Server) groupSend(w http.ResponseWriter, r *http.Request) {
	body, param, ok := s.decodeSend(w, r)
	if !ok {
		return
	}
	if body.OpenConversationID == "" {
		s.violate("groupMessages/send without openConversationId")
	}
	s.record(w, Sent{Group: true, Conversation: body.OpenConversationID, Title: param["title"], Text: param["text"]})
}

func (s *Server) batchSend(w http.ResponseWriter, r *http.Request) {
	body, param, ok := s.decodeSend(w, r)
	if !ok {
		return
	}
	if len(body.UserIDs) != 1 {
		s.violate("oToMessages/batchSend with userIds %v", body.UserIDs)
		writeJSON(w, 400, map[string]string{"code": "InvalidParameter", "message": "userIds"})
		return
	}
	s.record(w, Sent{To: body.UserIDs[0], Title: param["title"], Text: param["text"]})
}

// AddFile makes a file downloadable by a download code.
func (s *Server) AddFile(code string, data []byte) {
	s.mu.Lock()
	s.files[code] = data
	s.mu.Unlock()
}

func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	var body struct{ DownloadCode, RobotCode string }
	_ = json.NewDecoder(r.Body).Decode(&body)
	if body.RobotCode != ClientID {
		s.violate("messageFiles/download: robotCode %q", body.RobotCode)
	}
	s.mu.Lock()
	_, ok := s.files[body.DownloadCode]
	s.mu.Unlock()
	if !ok {
		writeJSON(w, 404, map[string]string{"code": "fileNotFound", "message": "no such file"})
		return
	}
	writeJSON(w, 200, map[string]string{"downloadUrl": s.URL + "/files/" + body.DownloadCode})
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

// Sent returns what the robot sent, in order.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sent)
}
