// Package wecomtest is a local WeCom AI-bot long-connection server for
// tests. It speaks the {cmd, headers:{req_id}, body} JSON frames, checks
// what the adapter sends — the subscription's bot id and secret, that a
// reply uses a req_id WeCom issued, one stream per req_id, one frame per
// req_id in flight, nothing after a stream finished — and records
// protocol violations. Attachments are served encrypted the way WeCom
// encrypts them.
//
// Concurrency: a Server is safe for concurrent use by the code under test
// and the test: every method may be called from any goroutine, and the
// websocket (which answers each frame on a goroutine of its own) and the
// attachment handler share one lock. New registers t.Cleanup to shut it
// down.
package wecomtest

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
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

// Credentials the server accepts.
const (
	BotID  = "aibAbCdEf0123456789"
	Secret = "wecom-secret-5f2e9a1c7b"
)

// Sent is one frame of the bot's replies: a stream frame or a push.
type Sent struct {
	ChatID   string
	StreamID string // "" for pushes
	ReqID    string
	Edit     bool // a later frame of a stream
	Finish   bool
	Content  string
	Welcome  bool
	At       time.Time
}

// Message is what a user writes.
type Message struct {
	From    string
	Group   string // group chat id; "" = single chat
	Text    string
	Type    string         // replaces text ("image", "voice", "mixed", …)
	Payload map[string]any // the type's object
}

// Server is the fake.
type Server struct {
	URL     string // ws://…
	HTTPURL string // for attachments
	srv     *httptest.Server

	// AnswerDelay holds WeCom's answers to replies, to show whether the
	// adapter waits for each before sending the next.
	AnswerDelay time.Duration

	mu         sync.Mutex
	conn       *websocket.Conn
	wmu        sync.Mutex
	subscribed bool
	reqs       map[string]string    // callback req_id -> chat
	events     map[string]time.Time // enter_chat req_id -> when
	streamOf   map[string]string    // req_id -> its stream id
	finished   map[string]bool      // stream id -> finished
	inFlight   map[string]bool      // req_id -> a frame waits for its answer
	sent       []Sent
	pings      int
	files      map[string][]byte
	next       int
	violations []string
	conns      int
	queue      [][]byte // frames waiting for a subscribed connection
}

// New starts the server; it stops with the test.
func New(t testing.TB) *Server {
	s := &Server{reqs: map[string]string{}, events: map[string]time.Time{}, streamOf: map[string]string{},
		finished: map[string]bool{}, inFlight: map[string]bool{}, files: map[string][]byte{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /files/{name}", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		data, ok := s.files[r.PathValue("name")]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	})
	mux.HandleFunc("/", s.serve)
	s.srv = httptest.NewServer(mux)
	s.HTTPURL = s.srv.URL
	s.URL = "ws" + strings.TrimPrefix(s.srv.URL, "http")
	t.Cleanup(func() {
		s.mu.Lock()
		if s.conn != nil {
			s.conn.CloseNow()
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

type inFrame struct {
	Cmd     string `json:"cmd"`
	Headers struct {
		ReqID string `json:"req_id"`
	} `json:"headers"`
	Body json.RawMessage `json:"body"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	s.mu.Lock()
	if s.conn != nil {
		s.conn.CloseNow() // one connection per bot
	}
	s.conn, s.subscribed = c, false
	s.conns++
	s.mu.Unlock()
	for {
		_, data, err := c.Read(context.Background())
		if err != nil {
			return
		}
		var f inFrame
		if err := json.Unmarshal(data, &f); err != nil || f.Cmd == "" || f.Headers.ReqID == "" {
			s.violate("frame without cmd or req_id: %s", data)
			continue
		}
		go s.frame(c, f)
	}
}

func (s *Server) answer(c *websocket.Conn, reqID string, code int, msg string) {
	b, _ := json.Marshal(map[string]any{"headers": map[string]string{"req_id": reqID}, "errcode": code, "errmsg": msg})
	s.wmu.Lock()
	defer s.wmu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.Write(ctx, websocket.MessageText, b)
}

func (s *Server) frame(c *websocket.Conn, f inFrame) {
	switch f.Cmd {
	case "aibot_subscribe":
		var b struct {
			BotID  string `json:"bot_id"`
			Secret string `json:"secret"`
		}
		_ = json.Unmarshal(f.Body, &b)
		if b.BotID != BotID || b.Secret != Secret {
			s.answer(c, f.Headers.ReqID, 40001, "invalid bot_id or secret")
			return
		}
		s.mu.Lock()
		s.subscribed = true
		queued := s.queue
		s.queue = nil
		s.mu.Unlock()
		s.answer(c, f.Headers.ReqID, 0, "ok")
		for _, b := range queued {
			s.pushRaw(b)
		}
		return
	case "ping":
		s.mu.Lock()
		s.pings++
		s.mu.Unlock()
		s.answer(c, f.Headers.ReqID, 0, "ok")
		return
	}
	s.mu.Lock()
	subscribed := s.subscribed
	s.mu.Unlock()
	if !subscribed {
		s.violate("%s before a successful aibot_subscribe", f.Cmd)
		s.answer(c, f.Headers.ReqID, 40002, "not subscribed")
		return
	}
	code, msg := s.reply(f)
	if d := s.AnswerDelay; d > 0 {
		time.Sleep(d)
	}
	s.mu.Lock()
	delete(s.inFlight, f.Headers.ReqID)
	s.mu.Unlock()
	s.answer(c, f.Headers.ReqID, code, msg)
}

// reply checks and records a reply, push or welcome frame.
func (s *Server) reply(f inFrame) (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := f.Headers.ReqID
	if s.inFlight[id] {
		s.violations = append(s.violations, fmt.Sprintf("%s for req_id %s sent before WeCom answered the previous one", f.Cmd, id))
	}
	s.inFlight[id] = true
	switch f.Cmd {
	case "aibot_respond_msg":
		chat, ok := s.reqs[id]
		if !ok {
			s.violations = append(s.violations, "aibot_respond_msg with a req_id WeCom never issued: "+id)
			return 846605, "invalid req_id"
		}
		var b struct {
			MsgType string `json:"msgtype"`
			Stream  struct {
				ID      string `json:"id"`
				Content string `json:"content"`
				Finish  bool   `json:"finish"`
			} `json:"stream"`
		}
		if err := json.Unmarshal(f.Body, &b); err != nil || b.MsgType != "stream" || b.Stream.ID == "" {
			s.violations = append(s.violations, fmt.Sprintf("aibot_respond_msg body %s", f.Body))
			return 40003, "bad body"
		}
		first := s.streamOf[id] == ""
		switch {
		case first:
			s.streamOf[id] = b.Stream.ID
		case s.streamOf[id] != b.Stream.ID:
			s.violations = append(s.violations, "a second stream on req_id "+id)
			return 846606, "req_id already answered"
		case s.finished[b.Stream.ID]:
			s.violations = append(s.violations, "stream frame after finish: "+b.Stream.ID)
			return 846607, "stream finished"
		}
		if len(b.Stream.Content) > 20480 {
			s.violations = append(s.violations, fmt.Sprintf("stream content of %d bytes", len(b.Stream.Content)))
		}
		s.finished[b.Stream.ID] = b.Stream.Finish
		s.sent = append(s.sent, Sent{ChatID: chat, StreamID: b.Stream.ID, ReqID: id, Edit: !first, Finish: b.Stream.Finish, Content: b.Stream.Content, At: time.Now()})
	case "aibot_send_msg":
		var b struct {
			ChatID   string `json:"chatid"`
			MsgType  string `json:"msgtype"`
			Markdown struct {
				Content string `json:"content"`
			} `json:"markdown"`
		}
		if err := json.Unmarshal(f.Body, &b); err != nil || b.ChatID == "" || b.MsgType != "markdown" || b.Markdown.Content == "" {
			s.violations = append(s.violations, fmt.Sprintf("aibot_send_msg body %s", f.Body))
			return 40003, "bad body"
		}
		s.sent = append(s.sent, Sent{ChatID: b.ChatID, ReqID: id, Finish: true, Content: b.Markdown.Content, At: time.Now()})
	case "aibot_respond_welcome_msg":
		at, ok := s.events[id]
		if !ok || time.Since(at) > 5*time.Second {
			s.violations = append(s.violations, "welcome message without a fresh enter_chat req_id")
			return 846608, "welcome too late"
		}
		var b struct {
			Text struct {
				Content string `json:"content"`
			} `json:"text"`
		}
		_ = json.Unmarshal(f.Body, &b)
		s.sent = append(s.sent, Sent{ReqID: id, Welcome: true, Content: b.Text.Content, At: time.Now()})
	default:
		s.violations = append(s.violations, "unknown command "+f.Cmd)
		return 40004, "unknown cmd"
	}
	return 0, "ok"
}

func random() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// push sends a frame from WeCom on the live connection.
func (s *Server) push(cmd, reqID string, body any) {
	b, _ := json.Marshal(map[string]any{"cmd": cmd, "headers": map[string]string{"req_id": reqID}, "body": body})
	s.pushRaw(b)
}

func (s *Server) pushRaw(b []byte) {
	s.mu.Lock()
	c := s.conn
	if c == nil || !s.subscribed {
		s.queue = append(s.queue, b)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c.Write(ctx, websocket.MessageText, b) != nil {
		s.mu.Lock()
		s.queue = append(s.queue, b)
		s.mu.Unlock()
	}
}

// Ready reports whether a subscribed connection is up.
func (s *Server) Ready() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn != nil && s.subscribed
}

// Emit delivers a user message; it returns the message id and the chat id
// replies go to.
func (s *Server) Emit(m Message) (msgID, chatID string) {
	s.mu.Lock()
	s.next++
	msgID = fmt.Sprintf("msg%04d%s", s.next, random())
	reqID := "cb_" + random()
	chatID = m.From
	if m.Group != "" {
		chatID = m.Group
	}
	s.reqs[reqID] = chatID
	s.mu.Unlock()
	body := map[string]any{"msgid": msgID, "aibotid": BotID, "chattype": "single", "from": map[string]string{"userid": m.From}, "msgtype": "text"}
	if m.Group != "" {
		body["chattype"], body["chatid"] = "group", m.Group
	}
	if m.Type != "" {
		body["msgtype"], body[m.Type] = m.Type, m.Payload
	} else {
		body["text"] = map[string]string{"content": m.Text}
	}
	s.push("aibot_msg_callback", reqID, body)
	return msgID, chatID
}

// EmitMalformed sends a callback whose body is not an object.
func (s *Server) EmitMalformed() {
	s.pushRaw([]byte(`{"cmd":"aibot_msg_callback","headers":{"req_id":"cb_bad"},"body":"garbage"}`))
}

// EnterChat sends the enter_chat event of a user opening the bot's chat.
func (s *Server) EnterChat(user string) {
	reqID := "ev_" + random()
	s.mu.Lock()
	s.events[reqID] = time.Now()
	s.mu.Unlock()
	s.push("aibot_event_callback", reqID, map[string]any{"msgid": "ev" + random(), "msgtype": "event", "chattype": "single",
		"from": map[string]string{"userid": user}, "event": map[string]string{"eventtype": "enter_chat"}})
}

// TakeOver tells the bot another connection replaced it.
func (s *Server) TakeOver() {
	s.push("aibot_event_callback", "ev_"+random(), map[string]any{"msgid": "ev" + random(), "msgtype": "event",
		"event": map[string]string{"eventtype": "disconnected_event"}})
}

// Drop closes the connection without a word.
func (s *Server) Drop() {
	s.mu.Lock()
	c := s.conn
	s.conn = nil
	s.mu.Unlock()
	if c != nil {
		c.CloseNow()
	}
}

// Connections is how many connections the adapter opened.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// Pings is how many pings the adapter sent.
func (s *Server) Pings() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pings
}

// Sent returns the reply frames, in order.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sent)
}

// Encrypt encrypts data the way WeCom does for attachments and returns the
// ciphertext and the aeskey (base64 of a random 32-byte key).
func Encrypt(data []byte) ([]byte, string) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	pad := 32 - len(data)%32
	plain := append(slices.Clone(data), bytes.Repeat([]byte{byte(pad)}, pad)...)
	block, _ := aes.NewCipher(key)
	out := make([]byte, len(plain))
	cipher.NewCBCEncrypter(block, key[:16]).CryptBlocks(out, plain)
	return out, base64.StdEncoding.EncodeToString(key)
}

// AddFile serves data encrypted and returns its URL and aeskey.
func (s *Server) AddFile(data []byte) (url, aesKey string) {
	enc, key := Encrypt(data)
	name := random()
	s.mu.Lock()
	s.files[name] = enc
	s.mu.Unlock()
	return s.HTTPURL + "/files/" + name, key
}
