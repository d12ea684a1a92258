// Package weixintest is a local WeChat ilink bot API for tests: the QR
// login, the getupdates long poll with its cursor, sendmessage, and the CDN
// serving AES-128-ECB encrypted attachments. It checks what the adapter
// sends — the bot token and the ilink headers (a fresh X-WECHAT-UIN per
// request), the cursor, the user's latest context token on every reply —
// and records protocol violations.
//
// Concurrency: a Server is safe for concurrent use by the code under test
// and the test: every method may be called from any goroutine, and the
// handlers, held getupdates long polls included, run on the httptest
// server's goroutines under one lock. New registers t.Cleanup to shut it
// down.
package weixintest

import (
	"crypto/aes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Token is the bot token a confirmed login hands out and the API accepts.
const Token = "ilink-bot-token-7c1d9e"

// Sent is a message the bot sent.
type Sent struct {
	To, ClientID, Text, ContextToken string
	At                               time.Time
}

// Server is the fake.
type Server struct {
	URL string
	srv *httptest.Server

	mu         sync.Mutex
	msgs       []json.RawMessage
	ids        []string // message ids, by position
	changed    chan struct{}
	contexts   map[string]string // user -> latest context token
	cursors    []int             // positions the adapter polled from
	uins       map[string]bool
	sent       []Sent
	stale      bool
	failUntil  time.Time
	statuses   []string // scripted QR statuses, then "confirmed"
	qrs        int
	files      map[string][]byte
	next       int
	violations []string
}

// New starts the fake; it stops with the test.
func New(t testing.TB) *Server {
	s := &Server{changed: make(chan struct{}), contexts: map[string]string{}, uins: map[string]bool{}, files: map[string][]byte{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /ilink/bot/getupdates", s.getUpdates)
	mux.HandleFunc("POST /ilink/bot/sendmessage", s.sendMessage)
	mux.HandleFunc("GET /ilink/bot/get_bot_qrcode", s.qrcode)
	mux.HandleFunc("GET /ilink/bot/get_qrcode_status", s.qrStatus)
	mux.HandleFunc("GET /download", s.download)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
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

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v) // ilink answers 200 and puts errors in the body
}

// authed checks the headers every authenticated call carries.
func (s *Server) authed(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("AuthorizationType") != "ilink_bot_token" || r.Header.Get("iLink-App-Id") != "bot" {
		s.violate("%s: missing AuthorizationType or iLink-App-Id", r.URL.Path)
	}
	uin := r.Header.Get("X-WECHAT-UIN")
	dec, err := base64.StdEncoding.DecodeString(uin)
	if n, perr := strconv.ParseUint(string(dec), 10, 32); err != nil || perr != nil || n > 1<<32-1 {
		s.violate("%s: X-WECHAT-UIN %q is not base64 of a decimal uint32", r.URL.Path, uin)
	}
	s.mu.Lock()
	if s.uins[uin] {
		s.violations = append(s.violations, "X-WECHAT-UIN reused: "+uin)
	}
	s.uins[uin] = true
	stale, failing := s.stale, time.Now().Before(s.failUntil)
	s.mu.Unlock()
	switch {
	case failing:
		w.WriteHeader(http.StatusBadGateway)
		return false
	case r.Header.Get("Authorization") != "Bearer "+Token:
		writeJSON(w, map[string]any{"ret": -1, "errmsg": "invalid token"})
		return false
	case stale:
		writeJSON(w, map[string]any{"ret": -14, "errcode": -14, "errmsg": "session timeout"})
		return false
	}
	return true
}

func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request) {
	if !s.authed(w, r) {
		return
	}
	var body struct {
		Buf      string            `json:"get_updates_buf"`
		BaseInfo map[string]string `json:"base_info"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.BaseInfo["channel_version"] == "" {
		s.violate("getupdates: body without get_updates_buf/base_info: %v", err)
	}
	pos := 0
	if body.Buf != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(body.Buf, "buf-"))
		if err != nil || !strings.HasPrefix(body.Buf, "buf-") {
			s.violate("getupdates: a cursor this server never gave: %q", body.Buf)
		}
		pos = n
	}
	deadline := time.After(time.Second)
	for {
		s.mu.Lock()
		s.cursors = append(s.cursors, pos)
		out := slices.Clone(s.msgs[min(pos, len(s.msgs)):])
		end := len(s.msgs)
		changed := s.changed
		s.mu.Unlock()
		if len(out) > 0 {
			writeJSON(w, map[string]any{"ret": 0, "msgs": out, "get_updates_buf": "buf-" + strconv.Itoa(end), "longpolling_timeout_ms": 35000})
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		case <-deadline:
			writeJSON(w, map[string]any{"ret": 0, "msgs": []any{}, "get_updates_buf": "buf-" + strconv.Itoa(end), "longpolling_timeout_ms": 35000})
			return
		}
	}
}

func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request) {
	if !s.authed(w, r) {
		return
	}
	var body struct {
		Msg struct {
			To           string `json:"to_user_id"`
			ClientID     string `json:"client_id"`
			MessageType  int    `json:"message_type"`
			MessageState int    `json:"message_state"`
			ContextToken string `json:"context_token"`
			Items        []struct {
				Type     int `json:"type"`
				TextItem struct {
					Text string `json:"text"`
				} `json:"text_item"`
			} `json:"item_list"`
		} `json:"msg"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		s.violate("sendmessage: %v", err)
		writeJSON(w, map[string]any{"ret": -2, "errmsg": "bad body"})
		return
	}
	m := body.Msg
	s.mu.Lock()
	want := s.contexts[m.To]
	s.mu.Unlock()
	if m.ContextToken == "" || m.ContextToken != want {
		s.violate("sendmessage to %s with context token %q, want the latest %q", m.To, m.ContextToken, want)
		writeJSON(w, map[string]any{"ret": -2, "errmsg": "invalid context token"})
		return
	}
	if m.MessageType != 2 || m.MessageState != 2 || m.ClientID == "" || len(m.Items) != 1 || m.Items[0].Type != 1 || m.Items[0].TextItem.Text == "" {
		s.violate("sendmessage body %+v", m)
		writeJSON(w, map[string]any{"ret": -2, "errmsg": "bad message"})
		return
	}
	if n := len([]rune(m.Items[0].TextItem.Text)); n > 2000 {
		s.violate("sendmessage text of %d characters", n)
	}
	s.mu.Lock()
	s.sent = append(s.sent, Sent{To: m.To, ClientID: m.ClientID, Text: m.Items[0].TextItem.Text, ContextToken: m.ContextToken, At: time.Now()})
	s.mu.Unlock()
	writeJSON(w, map[string]any{"ret": 0})
}

// Item is one item of a user message.
type Item = map[string]any

// Emit makes user write items (nil: a text item with text); it returns
// the message id.
func (s *Server) Emit(user, text string, items ...Item) string {
	if len(items) == 0 {
		items = []Item{{"type": 1, "text_item": map[string]string{"text": text}}}
	}
	s.mu.Lock()
	s.next++
	id := strconv.FormatInt(7448678501208000000+int64(s.next), 10)
	ctx := fmt.Sprintf("ctx-%s-%d", user, s.next)
	s.contexts[user] = ctx
	s.mu.Unlock()
	b, _ := json.Marshal(map[string]any{
		"message_id": json.Number(id), "from_user_id": user, "to_user_id": "bot@im.bot", "create_time_ms": time.Now().UnixMilli(),
		"message_type": 1, "message_state": 2, "context_token": ctx, "item_list": items,
	})
	s.append(id, b)
	return id
}

// EmitEcho adds a message the bot itself sent (message_type 2).
func (s *Server) EmitEcho(text string) {
	b, _ := json.Marshal(map[string]any{"message_id": 1, "from_user_id": "bot@im.bot", "message_type": 2,
		"item_list": []Item{{"type": 1, "text_item": map[string]string{"text": text}}}})
	s.append("echo", b)
}

// EmitMalformed adds a message the adapter cannot decode.
func (s *Server) EmitMalformed() {
	s.append("bad", json.RawMessage(`{"message_id":"x","item_list":5}`))
}

func (s *Server) append(id string, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, b)
	s.ids = append(s.ids, id)
	close(s.changed)
	s.changed = make(chan struct{})
}

// Acked reports whether the adapter polled from a cursor past the message
// (it has taken it).
func (s *Server) Acked(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.Index(s.ids, id)
	if i < 0 {
		return false
	}
	return slices.ContainsFunc(s.cursors, func(p int) bool { return p > i })
}

// Fail makes calls fail with HTTP 502 for d.
func (s *Server) Fail(d time.Duration) {
	s.mu.Lock()
	s.failUntil = time.Now().Add(d)
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// Expire makes the login stale (errcode -14).
func (s *Server) Expire() {
	s.mu.Lock()
	s.stale = true
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// Sent returns what the bot sent, in order.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sent)
}

// ScriptLogin sets the statuses the QR code goes through before
// "confirmed" ("wait", "scaned", "expired", …).
func (s *Server) ScriptLogin(statuses ...string) {
	s.mu.Lock()
	s.statuses = statuses
	s.mu.Unlock()
}

// QRCodes is how many QR codes were handed out.
func (s *Server) QRCodes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.qrs
}

func (s *Server) qrcode(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("bot_type") != "3" {
		s.violate("get_bot_qrcode without bot_type=3")
	}
	s.mu.Lock()
	s.qrs++
	n := s.qrs
	s.mu.Unlock()
	writeJSON(w, map[string]any{"qrcode": fmt.Sprintf("qr-%d", n), "qrcode_img_content": fmt.Sprintf("https://liteapp.weixin.qq.com/q/qr-%d", n)})
}

func (s *Server) qrStatus(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Query().Get("qrcode"), "qr-") {
		s.violate("get_qrcode_status for an unknown QR code")
	}
	s.mu.Lock()
	status := "confirmed"
	if len(s.statuses) > 0 {
		status, s.statuses = s.statuses[0], s.statuses[1:]
	}
	s.mu.Unlock()
	out := map[string]any{"status": status}
	if status == "confirmed" {
		out["bot_token"], out["ilink_bot_id"], out["baseurl"], out["ilink_user_id"] = Token, "bot123@im.bot", s.URL, "owner@im.wechat"
	}
	writeJSON(w, out)
}

// AddFile serves data on the CDN encrypted with AES-128-ECB and returns the
// item's media object (encrypt_query_param and aes_key as base64 of the
// key's hex digits, as WeChat sends it).
func (s *Server) AddFile(data []byte) map[string]string {
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	pad := aes.BlockSize - len(data)%aes.BlockSize
	plain := append(slices.Clone(data), make([]byte, pad)...)
	for i := len(data); i < len(plain); i++ {
		plain[i] = byte(pad)
	}
	block, _ := aes.NewCipher(key)
	enc := make([]byte, len(plain))
	for i := 0; i < len(plain); i += aes.BlockSize {
		block.Encrypt(enc[i:i+aes.BlockSize], plain[i:i+aes.BlockSize])
	}
	param := "eqp-" + hex.EncodeToString(key[:4])
	s.mu.Lock()
	s.files[param] = enc
	s.mu.Unlock()
	return map[string]string{"encrypt_query_param": param, "aes_key": base64.StdEncoding.EncodeToString([]byte(hex.EncodeToString(key)))}
}

func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	data, ok := s.files[r.URL.Query().Get("encrypted_query_param")]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(data)
}
