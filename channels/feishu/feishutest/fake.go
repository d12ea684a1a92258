// Package feishutest is a local stand-in for Feishu / Lark in tests: an
// httptest server answering the Open Platform calls the adapter makes
// (tenant_access_token, bot info, messages, replies, reactions, uploads,
// resources, CardKit cards) and serving the long connection: POST
// /callback/ws/endpoint hands out a websocket URL whose binary frames are
// proto2 Frames (control ping/pong, data frames with events, payloads
// split across frames on request).
//
// It checks what the adapter sends and records what breaks the protocol
// (Violations): a missing or stale tenant token, a ping without the
// connection's service id, an acknowledgement that does not echo the data
// frame or whose payload is not {"code":200}, a card update whose sequence
// does not increase, card content updates less than MinEditGap apart or
// after streaming mode was turned off.
//
// Concurrency: a Server is safe for concurrent use by the code under test
// and the test: every method may be called from any goroutine, and the REST
// handlers and each long connection (a reader, and a writer goroutine
// draining what Push queued) share one lock. New registers t.Cleanup to shut
// it down.
package feishutest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Identities the fake knows.
const (
	AppID     = "cli_fake_app"
	AppSecret = "fake-app-secret-0123"
	BotOpenID = "ou_bot"
	BotName   = "nanobot"
	serviceID = 77
)

// MinEditGap is the smallest gap between two content updates of one card
// the fake accepts without recording a violation.
const MinEditGap = 500 * time.Millisecond

// Sent is one message the adapter sent, or one content update of a card
// message (Edit).
type Sent struct {
	ChatID    string
	MessageID string
	MsgType   string // post, text, interactive, image, file, audio
	// Text is what the user sees: the Markdown of a post's md elements, a
	// text's text, a card's markdown content.
	Text string
	Edit bool
	// ReplyTo and InThread are set for replies.
	ReplyTo  string
	InThread bool
	At       time.Time
}

// Card is a CardKit card entity.
type Card struct {
	ID        string
	MessageID string
	Content   string
	Streaming bool
	Sequence  int
	Updates   int
	Settings  []string // settings PATCH bodies, in order
	lastPut   time.Time
}

// Reaction is one reaction the adapter added.
type Reaction struct{ MessageID, Emoji string }

// Upload is one uploaded image or file.
type Upload struct {
	Kind, Name, FileType string
	// Duration is the duration field (milliseconds, audio and video).
	Duration string
	// Key is the image_key or file_key the upload was answered with.
	Key  string
	Data []byte
}

// Server is the fake.
type Server struct {
	URL string

	t   testing.TB
	srv *httptest.Server

	// PingInterval is the ClientConfig.PingInterval handed out (seconds).
	PingInterval int

	mu           sync.Mutex
	tokens       map[string]bool // valid tenant tokens
	nextID       int
	conns        map[*websocket.Conn]context.CancelFunc
	outbox       chan []byte // frames to write to the current connection
	sentFrames   map[string][]*frame
	acks         map[string]int
	pings        int
	endpoints    int
	failOpens    int
	sent         []Sent
	cards        map[string]*Card
	cardElements map[string]string
	chats        map[string]string // message id -> chat id
	reactions    []Reaction
	uploads      []Upload
	resources    map[string][]byte
	violations   []string
	tokenFetchs  int
	botInfos     int
}

// New starts a fake; it stops when the test ends.
func New(t testing.TB) *Server {
	s := &Server{
		t: t, PingInterval: 120, tokens: map[string]bool{}, conns: map[*websocket.Conn]context.CancelFunc{},
		outbox: make(chan []byte, 256), sentFrames: map[string][]*frame{}, acks: map[string]int{},
		cards: map[string]*Card{}, cardElements: map[string]string{}, chats: map[string]string{}, resources: map[string][]byte{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /open-apis/auth/v3/tenant_access_token/internal", s.token)
	mux.HandleFunc("POST /callback/ws/endpoint", s.endpoint)
	mux.HandleFunc("GET /ws", s.socket)
	mux.HandleFunc("GET /open-apis/bot/v3/info", s.authed(s.botInfo))
	mux.HandleFunc("POST /open-apis/im/v1/messages", s.authed(s.send))
	mux.HandleFunc("POST /open-apis/im/v1/messages/{id}/reply", s.authed(s.send))
	mux.HandleFunc("POST /open-apis/im/v1/messages/{id}/reactions", s.authed(s.react))
	mux.HandleFunc("GET /open-apis/im/v1/messages/{id}/resources/{key}", s.authed(s.resource))
	mux.HandleFunc("POST /open-apis/im/v1/images", s.authed(s.upload))
	mux.HandleFunc("POST /open-apis/im/v1/files", s.authed(s.upload))
	mux.HandleFunc("POST /open-apis/cardkit/v1/cards", s.authed(s.createCard))
	mux.HandleFunc("PUT /open-apis/cardkit/v1/cards/{card}/elements/{el}/content", s.authed(s.cardContent))
	mux.HandleFunc("PATCH /open-apis/cardkit/v1/cards/{card}/settings", s.authed(s.cardSettings))
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	t.Cleanup(func() {
		s.Drop()
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
	return s
}

func (s *Server) violate(format string, args ...any) {
	s.violations = append(s.violations, fmt.Sprintf(format, args...))
}

// Violations lists the protocol errors the adapter made.
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.violations...)
}

func reply(w http.ResponseWriter, status int, v map[string]any) {
	if _, ok := v["code"]; !ok {
		v["code"] = 0
		v["msg"] = "success"
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, status, code int, msg string) {
	reply(w, status, map[string]any{"code": code, "msg": msg})
}

func (s *Server) id(prefix string) string {
	s.nextID++
	return fmt.Sprintf("%s%04d", prefix, s.nextID)
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	var in struct {
		AppID     string `json:"app_id"`
		AppSecret string `json:"app_secret"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.AppID != AppID || in.AppSecret != AppSecret {
		fail(w, http.StatusOK, 10014, "app secret invalid")
		return
	}
	s.mu.Lock()
	tok := s.id("t-fake-token-")
	s.tokens[tok] = true
	s.tokenFetchs++
	s.mu.Unlock()
	reply(w, http.StatusOK, map[string]any{"code": 0, "msg": "ok", "tenant_access_token": tok, "expire": 7200})
}

// ExpireTokens makes every issued tenant token invalid (code 99991663).
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = map[string]bool{}
}

// TokenFetches is how many tenant tokens were handed out.
func (s *Server) TokenFetches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokenFetchs
}

// authed checks the Bearer tenant token before h runs (with s.mu held).
func (s *Server) authed(h func(w http.ResponseWriter, r *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		defer s.mu.Unlock()
		if !ok || !s.tokens[tok] {
			fail(w, http.StatusBadRequest, 99991663, "Invalid access token for authorization. Please make a request with token attached.")
			return
		}
		h(w, r)
	}
}

func (s *Server) botInfo(w http.ResponseWriter, _ *http.Request) {
	s.botInfos++
	reply(w, http.StatusOK, map[string]any{"code": 0, "msg": "ok", "bot": map[string]any{"open_id": BotOpenID, "app_name": BotName, "activate_status": 2}})
}

// FailNextOpens makes the next n endpoint calls answer "system busy".
func (s *Server) FailNextOpens(n int) {
	s.mu.Lock()
	s.failOpens = n
	s.mu.Unlock()
}

// Opens is how many long-connection endpoints were handed out.
func (s *Server) Opens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.endpoints
}

func (s *Server) endpoint(w http.ResponseWriter, r *http.Request) {
	var in struct {
		AppID     string `json:"AppID"`
		AppSecret string `json:"AppSecret"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.AppID != AppID || in.AppSecret != AppSecret {
		fail(w, http.StatusOK, 403, "app id or secret invalid")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failOpens > 0 {
		s.failOpens--
		fail(w, http.StatusOK, 1, "system busy")
		return
	}
	s.endpoints++
	ticket := s.id("ticket-")
	u := "ws" + strings.TrimPrefix(s.URL, "http") + "/ws?device_id=dev1&service_id=" + strconv.Itoa(serviceID) + "&access_key=ak-secret-key&ticket=" + ticket
	reply(w, http.StatusOK, map[string]any{"code": 0, "msg": "ok", "data": map[string]any{
		"URL":          u,
		"ClientConfig": map[string]any{"ReconnectCount": -1, "ReconnectInterval": 120, "ReconnectNonce": 30, "PingInterval": s.PingInterval},
	}})
}

// socket serves one long connection: it writes queued frames and reads
// pings and acknowledgements.
func (s *Server) socket(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("access_key") != "ak-secret-key" || r.URL.Query().Get("ticket") == "" {
		w.Header().Set("Handshake-Status", "514")
		http.Error(w, "auth failed", http.StatusForbidden)
		return
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	conn.SetReadLimit(16 << 20)
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	s.conns[conn] = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
		cancel()
		conn.CloseNow()
	}()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case b := <-s.outbox:
				if err := conn.Write(ctx, websocket.MessageBinary, b); err != nil {
					// Not written: keep it for the next connection.
					select {
					case s.outbox <- b:
					default:
					}
					cancel()
					return
				}
			}
		}
	}()
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		if typ != websocket.MessageBinary {
			s.mu.Lock()
			s.violate("the adapter sent a non-binary message")
			s.mu.Unlock()
			continue
		}
		f, err := decodeFrame(data)
		s.mu.Lock()
		switch {
		case err != nil:
			s.violate("undecodable frame from the adapter: %v", err)
		case f.Method == 0:
			s.control(ctx, f)
		default:
			s.ack(f)
		}
		s.mu.Unlock()
	}
}

// control answers a ping with a pong carrying the client config.
func (s *Server) control(_ context.Context, f *frame) {
	if f.header("type") != "ping" {
		s.violate("control frame of type %q from the adapter", f.header("type"))
		return
	}
	if f.Service != serviceID {
		s.violate("ping with service %d, want %d", f.Service, serviceID)
	}
	s.pings++
	cfg, _ := json.Marshal(map[string]any{"ReconnectCount": -1, "ReconnectInterval": 120, "ReconnectNonce": 30, "PingInterval": s.PingInterval})
	pong := &frame{Service: serviceID, Method: 0, Headers: [][2]string{{"type", "pong"}}, Payload: cfg}
	select {
	case s.outbox <- pong.encode():
	default:
	}
}

// Pings is how many pings the adapter sent.
func (s *Server) Pings() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pings
}

// ack checks an acknowledgement: it must echo a data frame the fake sent
// (SeqID, LogID, service, headers) with a {"code":200} payload.
func (s *Server) ack(f *frame) {
	id := f.header("message_id")
	sent, ok := s.sentFrames[id]
	if !ok {
		s.violate("acknowledgement for unknown message_id %q", id)
		return
	}
	var match *frame
	for _, o := range sent {
		if o.SeqID == f.SeqID && o.LogID == f.LogID {
			match = o
		}
	}
	if match == nil {
		s.violate("acknowledgement of %s does not echo the SeqID/LogID of a frame sent", id)
		return
	}
	if f.Service != match.Service || f.Method != match.Method {
		s.violate("acknowledgement of %s: service/method %d/%d, want %d/%d", id, f.Service, f.Method, match.Service, match.Method)
	}
	for _, k := range []string{"type", "sum", "seq", "trace_id"} {
		if f.header(k) != match.header(k) {
			s.violate("acknowledgement of %s: header %s = %q, want %q", id, k, f.header(k), match.header(k))
		}
	}
	if _, err := strconv.Atoi(f.header("biz_rt")); err != nil {
		s.violate("acknowledgement of %s without a numeric biz_rt header", id)
	}
	var resp struct {
		Code *int `json:"code"`
	}
	if err := json.Unmarshal(f.Payload, &resp); err != nil || resp.Code == nil || *resp.Code != 200 {
		s.violate("acknowledgement of %s with payload %q, want {\"code\":200,...}", id, f.Payload)
		return
	}
	s.acks[id]++
}

// Acked reports whether the data frame(s) with this frame message_id were
// acknowledged.
func (s *Server) Acked(frameID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acks[frameID] > 0
}

// Drop closes the long connection(s); the adapter must reconnect.
func (s *Server) Drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c, cancel := range s.conns {
		cancel()
		c.CloseNow()
	}
}

// Connected reports whether a long connection is open.
func (s *Server) Connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns) > 0
}

// queue hands frames to the connection writer (the current one or the
// next); the caller holds s.mu.
func (s *Server) queue(frames ...*frame) {
	for _, f := range frames {
		select {
		case s.outbox <- f.encode():
		default:
			s.t.Errorf("feishutest: outbox full")
		}
	}
}

// sendMessage records a message sent by the adapter (s.mu held).
func (s *Server) send(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ReceiveID     string `json:"receive_id"`
		MsgType       string `json:"msg_type"`
		Content       string `json:"content"`
		UUID          string `json:"uuid"`
		ReplyInThread bool   `json:"reply_in_thread"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		fail(w, http.StatusBadRequest, 230001, "invalid request body")
		return
	}
	replyTo := r.PathValue("id")
	chat := in.ReceiveID
	if replyTo != "" {
		chat = s.chats[replyTo]
		if chat == "" {
			fail(w, http.StatusBadRequest, 230011, "the message to reply to was not found")
			return
		}
	} else if q := r.URL.Query().Get("receive_id_type"); q != "chat_id" {
		s.violate("send with receive_id_type %q, want chat_id", q)
	}
	if chat == "" {
		fail(w, http.StatusBadRequest, 230001, "receive_id is empty")
		return
	}
	text, err := s.visible(in.MsgType, in.Content)
	if err != nil {
		s.violate("send: %v", err)
		fail(w, http.StatusBadRequest, 230001, "invalid content: "+err.Error())
		return
	}
	id := s.id("om_sent_")
	s.chats[id] = chat
	if in.MsgType == "interactive" {
		var c struct {
			Data struct {
				CardID string `json:"card_id"`
			} `json:"data"`
		}
		_ = json.Unmarshal([]byte(in.Content), &c)
		if cd := s.cards[c.Data.CardID]; cd != nil {
			cd.MessageID, cd.lastPut = id, time.Now()
		}
	}
	s.sent = append(s.sent, Sent{ChatID: chat, MessageID: id, MsgType: in.MsgType, Text: text, ReplyTo: replyTo, InThread: in.ReplyInThread, At: time.Now()})
	reply(w, http.StatusOK, map[string]any{"data": map[string]any{"message_id": id, "chat_id": chat, "msg_type": in.MsgType}})
}

// visible is what a message shows, or why its content is invalid.
func (s *Server) visible(msgType, content string) (string, error) {
	switch msgType {
	case "text":
		var c struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal([]byte(content), &c); err != nil || c.Text == "" {
			return "", fmt.Errorf("text content %q", content)
		}
		return c.Text, nil
	case "post":
		var c map[string]struct {
			Title   string `json:"title"`
			Content [][]struct {
				Tag  string `json:"tag"`
				Text string `json:"text"`
			} `json:"content"`
		}
		if err := json.Unmarshal([]byte(content), &c); err != nil || len(c) == 0 {
			return "", fmt.Errorf("post content %q", content)
		}
		var lines []string
		for _, loc := range c {
			for _, para := range loc.Content {
				var b strings.Builder
				for _, e := range para {
					b.WriteString(e.Text)
				}
				lines = append(lines, b.String())
			}
			break
		}
		return strings.Join(lines, "\n"), nil
	case "interactive":
		var c struct {
			Type string `json:"type"`
			Data struct {
				CardID string `json:"card_id"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(content), &c); err != nil || c.Type != "card" {
			return "", fmt.Errorf("interactive content %q is not a card entity reference", content)
		}
		cd := s.cards[c.Data.CardID]
		if cd == nil {
			return "", fmt.Errorf("unknown card %q", c.Data.CardID)
		}
		if cd.MessageID != "" {
			return "", fmt.Errorf("card %s sent twice", cd.ID)
		}
		return cd.Content, nil
	case "image":
		var c struct {
			ImageKey string `json:"image_key"`
		}
		if err := json.Unmarshal([]byte(content), &c); err != nil || c.ImageKey == "" {
			return "", fmt.Errorf("image content %q", content)
		}
		return "[image " + c.ImageKey + "]", nil
	case "file":
		var c struct {
			FileKey string `json:"file_key"`
		}
		if err := json.Unmarshal([]byte(content), &c); err != nil || c.FileKey == "" {
			return "", fmt.Errorf("file content %q", content)
		}
		return "[file " + c.FileKey + "]", nil
	case "audio":
		// An audio message plays a file uploaded as opus.
		var c struct {
			FileKey string `json:"file_key"`
		}
		if err := json.Unmarshal([]byte(content), &c); err != nil || c.FileKey == "" {
			return "", fmt.Errorf("audio content %q", content)
		}
		for _, up := range s.uploads {
			if up.Key == c.FileKey {
				if up.FileType != "opus" {
					return "", fmt.Errorf("audio file %s was uploaded as %q, not opus", c.FileKey, up.FileType)
				}
				return "[audio " + c.FileKey + "]", nil
			}
		}
		return "", fmt.Errorf("unknown audio file_key %q", c.FileKey)
	}
	return "", fmt.Errorf("unknown msg_type %q", msgType)
}

// Sent returns the messages and card content updates, in order.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// CardOf returns the card shown by a message (nil if none).
func (s *Server) CardOf(messageID string) *Card {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.cards {
		if c.MessageID == messageID {
			cp := *c
			cp.Settings = append([]string(nil), c.Settings...)
			return &cp
		}
	}
	return nil
}

func (s *Server) react(w http.ResponseWriter, r *http.Request) {
	var in struct {
		ReactionType struct {
			EmojiType string `json:"emoji_type"`
		} `json:"reaction_type"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.ReactionType.EmojiType == "" {
		fail(w, http.StatusBadRequest, 231001, "reaction type is invalid")
		return
	}
	id := r.PathValue("id")
	if _, ok := s.chats[id]; !ok {
		fail(w, http.StatusBadRequest, 231003, "message not found")
		return
	}
	s.reactions = append(s.reactions, Reaction{MessageID: id, Emoji: in.ReactionType.EmojiType})
	reply(w, http.StatusOK, map[string]any{"data": map[string]any{"reaction_id": s.id("r_"), "reaction_type": map[string]string{"emoji_type": in.ReactionType.EmojiType}}})
}

// Reactions returns the reactions added, in order.
func (s *Server) Reactions() []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Reaction(nil), s.reactions...)
}

// AddResource makes a file downloadable as a resource of messages.
func (s *Server) AddResource(key string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resources[key] = data
}

func (s *Server) resource(w http.ResponseWriter, r *http.Request) {
	id, key := r.PathValue("id"), r.PathValue("key")
	if _, ok := s.chats[id]; !ok {
		fail(w, http.StatusBadRequest, 234003, "message not found")
		return
	}
	if t := r.URL.Query().Get("type"); t != "image" && t != "file" {
		fail(w, http.StatusBadRequest, 234001, "invalid type")
		return
	}
	data, ok := s.resources[key]
	if !ok {
		fail(w, http.StatusBadRequest, 234004, "resource not found")
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(data)
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		fail(w, http.StatusBadRequest, 234001, "not multipart")
		return
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	up := Upload{Kind: "file"}
	if strings.HasSuffix(r.URL.Path, "/images") {
		up.Kind = "image"
	}
	fields := map[string]string{}
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			fail(w, http.StatusBadRequest, 234001, "bad multipart")
			return
		}
		b, _ := io.ReadAll(p)
		if p.FileName() != "" {
			up.Data = b
			if up.Name == "" {
				up.Name = p.FileName()
			}
		} else {
			fields[p.FormName()] = string(b)
		}
	}
	if up.Kind == "image" && fields["image_type"] != "message" {
		fail(w, http.StatusBadRequest, 234001, "image_type must be message")
		return
	}
	if up.Kind == "file" {
		up.FileType, up.Name, up.Duration = fields["file_type"], fields["file_name"], fields["duration"]
		if up.FileType == "" || up.Name == "" {
			fail(w, http.StatusBadRequest, 234001, "file_type and file_name are required")
			return
		}
	}
	if len(up.Data) == 0 {
		fail(w, http.StatusBadRequest, 234001, "empty file")
		return
	}
	if up.Kind == "image" {
		up.Key = s.id("img_")
		s.uploads = append(s.uploads, up)
		reply(w, http.StatusOK, map[string]any{"data": map[string]any{"image_key": up.Key}})
		return
	}
	up.Key = s.id("file_")
	s.uploads = append(s.uploads, up)
	reply(w, http.StatusOK, map[string]any{"data": map[string]any{"file_key": up.Key}})
}

// Uploads returns the uploaded files.
func (s *Server) Uploads() []Upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Upload(nil), s.uploads...)
}
