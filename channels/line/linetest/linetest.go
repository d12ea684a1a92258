// Package linetest is a local stand-in for the LINE Messaging API, written
// from LINE's Messaging API reference: the bot's side (bearer token on every
// call, /v2/bot/info, reply with single-use reply tokens that expire,
// push with X-Line-Retry-Key, the loading animation, message content) and
// LINE's side of the webhook (signed event deliveries to the bot's webhook
// URL, the answer recorded as the acknowledgement).
//
// It enforces what LINE enforces — a reply token works once and for a
// limited time (a second use gets 400 "Invalid reply token"), at most five
// messages per call, at most 5,000 characters (UTF-16 units) per text, a
// retry key must be a UUID and a repeated one gets 409 — and records what a
// real client should never do as violations.
//
// Concurrency: a Server is safe for concurrent use by the code under test
// and the test: every method may be called from any goroutine. Emit and
// EmitRaw post to the webhook on a goroutine of their own and return at once
// (Acked reports the answer later); t.Cleanup waits for those goroutines and
// shuts the server down.
package linetest

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
)

// Credentials the fake accepts and uses.
const (
	Token     = "line-access-token-6f1d0c2b9a"
	Secret    = "0123456789abcdef0123456789abcdef"
	BotUserID = "U00000000000000000000000000000b07"
)

// Sent is one message the bot sent.
type Sent struct {
	ChatID     string
	MessageID  string
	Text       string
	Reply      bool // through a reply token, else pushed
	QuoteToken string
	At         time.Time
}

// Message is what a user writes.
type Message struct {
	From  string // user id (U…)
	Group string // group id (C…) or room id (R…); "" = one-on-one
	Text  string
	// MentionBot puts an @mention of the bot at the start of Text.
	MentionBot bool
	// Image, when set, makes this an image message with that content.
	Image []byte
	// File, with FileName, makes this a file message.
	File     []byte
	FileName string
}

// Server is the fake.
type Server struct {
	// URL serves both api.line.me and api-data.line.me.
	URL string
	// WebhookURL is where events go (the gateway's webhook); set it
	// before emitting.
	WebhookURL string
	// ReplyTTL is how long a reply token works (LINE: about a minute).
	ReplyTTL time.Duration

	srv *httptest.Server
	wg  sync.WaitGroup

	mu         sync.Mutex
	replies    map[string]replyToken
	retryKeys  map[string]string // key -> accepted request id
	chats      map[string]bool
	content    map[string][]byte
	sent       []Sent
	loading    []string
	acks       map[string]int // message id -> webhook answer
	violations []string
	next       int
}

type replyToken struct {
	chat string
	at   time.Time
	used bool
}

// New starts the fake; it stops when the test ends (after any webhook
// calls in flight have returned).
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{ReplyTTL: time.Minute, replies: map[string]replyToken{}, retryKeys: map[string]string{},
		chats: map[string]bool{}, content: map[string][]byte{}, acks: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v2/bot/info", s.auth(s.info))
	mux.HandleFunc("POST /v2/bot/message/reply", s.auth(s.reply))
	mux.HandleFunc("POST /v2/bot/message/push", s.auth(s.push))
	mux.HandleFunc("POST /v2/bot/chat/loading/start", s.auth(s.loadingStart))
	mux.HandleFunc("GET /v2/bot/message/{id}/content", s.auth(s.getContent))
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	t.Cleanup(func() {
		s.wg.Wait()
		s.srv.Close()
	})
	return s
}

func (s *Server) id(prefix string) string {
	s.next++
	return fmt.Sprintf("%s%d%06d", prefix, time.Now().Unix()%100000, s.next)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Sign is the X-Line-Signature of body.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Emit makes LINE deliver m to the webhook (in the background) and returns
// the chat id and the message id.
func (s *Server) Emit(m Message) (chatID, messageID string) {
	s.mu.Lock()
	messageID = s.id("")
	chatID = m.From
	source := map[string]any{"type": "user", "userId": m.From}
	if m.Group != "" {
		chatID = m.Group
		if strings.HasPrefix(m.Group, "R") {
			source = map[string]any{"type": "room", "roomId": m.Group, "userId": m.From}
		} else {
			source = map[string]any{"type": "group", "groupId": m.Group, "userId": m.From}
		}
	}
	s.chats[chatID], s.chats[m.From] = true, true
	token := randomHex(16)
	s.replies[token] = replyToken{chat: chatID, at: time.Now()}
	var msg map[string]any
	switch {
	case m.Image != nil:
		s.content[messageID] = m.Image
		msg = map[string]any{"type": "image", "id": messageID, "quoteToken": randomHex(8), "contentProvider": map[string]any{"type": "line"}}
	case m.File != nil:
		s.content[messageID] = m.File
		msg = map[string]any{"type": "file", "id": messageID, "fileName": m.FileName, "fileSize": len(m.File)}
	default:
		text := m.Text
		msg = map[string]any{"type": "text", "id": messageID, "quoteToken": randomHex(8), "text": text}
		if m.MentionBot {
			at := "@nanobot"
			msg["text"] = at + " " + text
			msg["mention"] = map[string]any{"mentionees": []any{map[string]any{
				"index": 0, "length": len(utf16.Encode([]rune(at))), "type": "user", "userId": BotUserID, "isSelf": true}}}
		}
	}
	ev := map[string]any{
		"type": "message", "mode": "active", "timestamp": time.Now().UnixMilli(), "source": source,
		"webhookEventId": "01H" + strings.ToUpper(randomHex(11)), "deliveryContext": map[string]any{"isRedelivery": false},
		"replyToken": token, "message": msg,
	}
	body, _ := json.Marshal(map[string]any{"destination": BotUserID, "events": []any{ev}})
	s.mu.Unlock()
	s.deliver(messageID, body, Sign(Secret, body))
	return chatID, messageID
}

// EmitRaw delivers body, correctly signed, to the webhook in the
// background.
func (s *Server) EmitRaw(body []byte) { s.deliver("", body, Sign(Secret, body)) }

func (s *Server) deliver(messageID string, body []byte, sig string) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		code := s.Post(body, sig)
		if messageID != "" {
			s.mu.Lock()
			s.acks[messageID] = code
			s.mu.Unlock()
		}
	}()
}

// Post sends body to the webhook with signature sig and returns the
// answer's status (0 when the request failed).
func (s *Server) Post(body []byte, sig string) int {
	req, err := http.NewRequest(http.MethodPost, s.WebhookURL, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "LineBotWebhook/2.0")
	if sig != "" {
		req.Header.Set("X-Line-Signature", sig)
	}
	resp, err := webhookClient.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// webhookClient keeps no idle connections, so nothing of the fake's
// outlives a webhook call.
var webhookClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// Acked returns the webhook's answer to the delivery of a message (0 while
// none came).
func (s *Server) Acked(messageID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acks[messageID]
}

// Sent returns what the bot sent, in order.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// Loading returns the chats a loading animation was started in.
func (s *Server) Loading() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.loading...)
}

// Violations lists what the client did that LINE would refuse.
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.violations...)
}

func (s *Server) auth(h func(http.ResponseWriter, *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Line-Request-Id", randomHex(8))
		if r.Header.Get("Authorization") != "Bearer "+Token {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "Authentication failed. Confirm that the access token in the authorization header is valid."})
			return
		}
		h(w, r)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) info(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"userId": BotUserID, "basicId": "@123abcde", "displayName": "nanobot", "chatMode": "bot", "markAsReadMode": "auto"})
}

type outMessage struct {
	Type       string `json:"type"`
	Text       string `json:"text"`
	QuoteToken string `json:"quoteToken"`
}

// checkMessages applies LINE's limits; it returns the error message.
func (s *Server) checkMessages(msgs []outMessage) string {
	if len(msgs) == 0 || len(msgs) > 5 {
		return fmt.Sprintf("Size must be between 1 and 5 (%d messages)", len(msgs))
	}
	for i, m := range msgs {
		if m.Type != "text" {
			return fmt.Sprintf("messages[%d].type: the fake takes text only", i)
		}
		n := len(utf16.Encode([]rune(m.Text)))
		if n == 0 || n > 5000 {
			return fmt.Sprintf("messages[%d].text: Length must be between 1 and 5000 (%d)", i, n)
		}
	}
	return ""
}

func (s *Server) record(chat string, reply bool, msgs []outMessage) []map[string]string {
	var out []map[string]string
	for _, m := range msgs {
		id := s.id("5")
		s.sent = append(s.sent, Sent{ChatID: chat, MessageID: id, Text: m.Text, Reply: reply, QuoteToken: m.QuoteToken, At: time.Now()})
		out = append(out, map[string]string{"id": id, "quoteToken": randomHex(8)})
	}
	return out
}

func (s *Server) reply(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ReplyToken string       `json:"replyToken"`
		Messages   []outMessage `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "The request body has 1 error(s)"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tok, ok := s.replies[req.ReplyToken]
	if !ok || tok.used || time.Since(tok.at) > s.ReplyTTL {
		if ok && tok.used {
			s.violations = append(s.violations, "a reply token was used twice")
		}
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Invalid reply token"})
		return
	}
	if msg := s.checkMessages(req.Messages); msg != "" {
		s.violations = append(s.violations, "reply: "+msg)
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "The request body has 1 error(s)", "details": []any{map[string]string{"message": msg}}})
		return
	}
	tok.used = true
	s.replies[req.ReplyToken] = tok
	writeJSON(w, http.StatusOK, map[string]any{"sentMessages": s.record(tok.chat, true, req.Messages)})
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func (s *Server) push(w http.ResponseWriter, r *http.Request) {
	var req struct {
		To       string       `json:"to"`
		Messages []outMessage `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "The request body has 1 error(s)"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key, hasKey := r.Header["X-Line-Retry-Key"]
	if hasKey && !uuidRE.MatchString(key[0]) {
		s.violations = append(s.violations, fmt.Sprintf("push: X-Line-Retry-Key %q is not a UUID", key[0]))
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "The retry key is invalid"})
		return
	}
	if hasKey {
		if id, seen := s.retryKeys[key[0]]; seen {
			w.Header().Set("X-Line-Accepted-Request-Id", id)
			writeJSON(w, http.StatusConflict, map[string]any{"message": "The retry key is already accepted"})
			return
		}
	}
	if !s.chats[req.To] {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "The property, 'to', in the request body is invalid"})
		return
	}
	if msg := s.checkMessages(req.Messages); msg != "" {
		s.violations = append(s.violations, "push: "+msg)
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "The request body has 1 error(s)", "details": []any{map[string]string{"message": msg}}})
		return
	}
	if hasKey {
		s.retryKeys[key[0]] = w.Header().Get("X-Line-Request-Id")
	}
	writeJSON(w, http.StatusOK, map[string]any{"sentMessages": s.record(req.To, false, req.Messages)})
}

func (s *Server) loadingStart(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ChatID         string `json:"chatId"`
		LoadingSeconds int    `json:"loadingSeconds"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "The request body has 1 error(s)"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !strings.HasPrefix(req.ChatID, "U") || !s.chats[req.ChatID] {
		s.violations = append(s.violations, fmt.Sprintf("loading animation for %q, not a user in a one-on-one chat", req.ChatID))
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "The property, 'chatId', in the request body is invalid"})
		return
	}
	if req.LoadingSeconds != 0 && (req.LoadingSeconds < 5 || req.LoadingSeconds > 60 || req.LoadingSeconds%5 != 0) {
		s.violations = append(s.violations, fmt.Sprintf("loadingSeconds %d", req.LoadingSeconds))
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "The property, 'loadingSeconds', in the request body is invalid"})
		return
	}
	s.loading = append(s.loading, req.ChatID)
	writeJSON(w, http.StatusAccepted, map[string]any{})
}

func (s *Server) getContent(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	data, ok := s.content[r.PathValue("id")]
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not found"})
		return
	}
	w.Header().Set("Content-Type", http.DetectContentType(data))
	_, _ = w.Write(data)
}
