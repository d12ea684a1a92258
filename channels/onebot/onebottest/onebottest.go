// Package onebottest is a local stand-in for a OneBot v11 implementation
// (NapCat, Lagrange.OneBot, go-cqhttp), written from the OneBot v11
// specification (github.com/botuniverse/onebot-11): the "universal"
// websocket that carries events one way and actions with their echo the
// other, in both directions the spec defines — forward (the fake listens and
// the bot dials it) and reverse (the fake dials the bot's endpoint, with
// X-Self-ID and X-Client-Role headers, and dials again when dropped).
//
// It checks the access token the spec describes (Authorization: Bearer or
// ?access_token=; a wrong or missing one gets 401), answers get_login_info,
// send_private_msg and send_group_msg, sends lifecycle and heartbeat meta
// events, and records as violations what a real implementation would reject
// (an action without echo, ids that are not numbers, unknown segments).
//
// Concurrency: every method is safe for concurrent use.
package onebottest

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

// Ids and credentials the fake uses.
const (
	Token    = "onebot-access-token-5e2a"
	SelfID   = 10001
	Nickname = "nanobot"
)

// Message is what a QQ user writes.
type Message struct {
	From     int64
	Nickname string
	// Group is the group number; 0 is a private message.
	Group int64
	// Text is the message text.
	Text string
	// AtBot puts an at segment naming the bot before the text.
	AtBot bool
	// ReplyTo quotes an earlier message (a reply segment).
	ReplyTo string
	// Image attaches an image the fake serves at a URL.
	Image []byte
	// CQ sends the message as a CQ-code string instead of a segment array
	// (message_format "string").
	CQ bool
}

// Sent is one message the bot sent.
type Sent struct {
	// ChatID is the user id of a private chat or "group:<id>".
	ChatID    string
	MessageID string
	// Text joins the text segments; other segments show as [type].
	Text     string
	Segments []Segment
	At       time.Time
}

// Segment is a OneBot message segment.
type Segment struct {
	Type string         `json:"type"`
	Data map[string]any `json:"data"`
}

// Server is the fake implementation.
type Server struct {
	// URL is the forward websocket address (ws://127.0.0.1:port/).
	URL string
	t   testing.TB
	srv *httptest.Server

	mu         sync.Mutex
	conns      map[*websocket.Conn]struct{}
	connects   int
	queue      [][]byte
	wake       chan struct{}
	sent       []Sent
	violations []string
	nextID     int
	images     map[string][]byte
	heartbeat  time.Duration
	silent     bool
	beats      int
	authSeen   []string

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New starts the fake; it listens for forward connections at URL. Heartbeat
// events go out every interval (0: none). Cleanup is registered with t.
func New(t testing.TB, heartbeat time.Duration) *Server {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{t: t, conns: map[*websocket.Conn]struct{}{}, wake: make(chan struct{}, 1), images: map[string][]byte{},
		heartbeat: heartbeat, nextID: 5000, ctx: ctx, cancel: cancel}
	mux := http.NewServeMux()
	mux.HandleFunc("/img/", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		b, ok := s.images[strings.TrimPrefix(r.URL.Path, "/img/")]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(b)
	})
	mux.HandleFunc("/", s.accept)
	s.srv = httptest.NewServer(mux)
	s.URL = "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/"
	t.Cleanup(s.Close)
	return s
}

// Close drops every connection and stops the fake.
func (s *Server) Close() {
	s.cancel()
	s.mu.Lock()
	for c := range s.conns {
		c.Close(websocket.StatusGoingAway, "fake closing")
	}
	s.mu.Unlock()
	s.srv.CloseClientConnections()
	s.srv.Close()
	s.wg.Wait()
}

func (s *Server) violate(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.violations = append(s.violations, fmt.Sprintf(format, args...))
}

// Violations lists protocol errors the bot made.
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.violations...)
}

// Connects counts the connections made so far (either direction).
func (s *Server) Connects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connects
}

// Sent returns what the bot sent, in order.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// SetSilent stops (true) or resumes heartbeats, as a hung implementation
// would.
func (s *Server) SetSilent(v bool) {
	s.mu.Lock()
	s.silent = v
	s.mu.Unlock()
}

// Heartbeats counts the heartbeat events sent.
func (s *Server) Heartbeats() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.beats
}

// tokenOK checks the access token the way the spec describes it.
func tokenOK(r *http.Request) bool {
	if r.URL.Query().Get("access_token") == Token {
		return true
	}
	return r.Header.Get("Authorization") == "Bearer "+Token
}

// accept takes a forward connection.
func (s *Server) accept(w http.ResponseWriter, r *http.Request) {
	if !tokenOK(r) {
		http.Error(w, "wrong access token", http.StatusUnauthorized)
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	s.serve(r.Context(), c)
}

// DialReverse makes the fake connect to the bot's reverse websocket at url
// (ws://…/onebot/ws) with token, and connect again whenever the connection
// ends, until the fake closes. every is the wait between attempts.
func (s *Server) DialReverse(url, token string, every time.Duration) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for s.ctx.Err() == nil {
			h := http.Header{"X-Self-ID": {strconv.Itoa(SelfID)}, "X-Client-Role": {"Universal"}, "User-Agent": {"OneBot/11"}}
			if token != "" {
				h.Set("Authorization", "Bearer "+token)
			}
			c, resp, err := websocket.Dial(s.ctx, url, &websocket.DialOptions{HTTPHeader: h})
			if resp != nil && resp.Body != nil {
				resp.Body.Close()
			}
			if err == nil {
				s.serve(s.ctx, c)
			}
			select {
			case <-s.ctx.Done():
			case <-time.After(every):
			}
		}
	}()
}

// TryReverse dials the bot's reverse endpoint once with the given headers
// and reports the HTTP status of the handshake (101 when accepted; the
// connection is then closed).
func TryReverse(ctx context.Context, url string, h http.Header) int {
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err == nil {
		c.Close(websocket.StatusNormalClosure, "")
		return http.StatusSwitchingProtocols
	}
	if resp != nil {
		return resp.StatusCode
	}
	return 0
}

// serve runs one connection: lifecycle event, heartbeats, queued events
// out, actions in. It returns when the connection ends.
func (s *Server) serve(ctx context.Context, c *websocket.Conn) {
	c.SetReadLimit(16 << 20)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.connects++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.CloseNow()
	}()
	write := func(v any) error {
		b, _ := json.Marshal(v)
		wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
		defer wcancel()
		return c.Write(wctx, websocket.MessageText, b)
	}
	_ = write(map[string]any{"time": time.Now().Unix(), "self_id": SelfID, "post_type": "meta_event", "meta_event_type": "lifecycle", "sub_type": "connect"})
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	wg.Add(1)
	go func() { // events and heartbeats out
		defer wg.Done()
		defer cancel()
		var tick <-chan time.Time
		if s.heartbeat > 0 {
			tk := time.NewTicker(s.heartbeat)
			defer tk.Stop()
			tick = tk.C
		}
		for {
			s.mu.Lock()
			var next []byte
			if len(s.queue) > 0 {
				next, s.queue = s.queue[0], s.queue[1:]
			}
			s.mu.Unlock()
			if next != nil {
				wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
				err := c.Write(wctx, websocket.MessageText, next)
				wcancel()
				if err != nil {
					s.mu.Lock()
					s.queue = append([][]byte{next}, s.queue...)
					s.mu.Unlock()
					return
				}
				continue
			}
			select {
			case <-ctx.Done():
				return
			case <-s.wake:
			case <-tick:
				s.mu.Lock()
				silent := s.silent
				s.mu.Unlock()
				if !silent {
					hb := map[string]any{"time": time.Now().Unix(), "self_id": SelfID, "post_type": "meta_event", "meta_event_type": "heartbeat",
						"interval": s.heartbeat.Milliseconds(), "status": map[string]any{"online": true, "good": true}}
					if write(hb) != nil {
						return
					}
					s.mu.Lock()
					s.beats++
					s.mu.Unlock()
				}
			}
		}
	}()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return
		}
		if resp := s.action(b); resp != nil && write(resp) != nil {
			return
		}
	}
}

// action answers one action frame.
func (s *Server) action(b []byte) map[string]any {
	var a struct {
		Action string                     `json:"action"`
		Params map[string]json.RawMessage `json:"params"`
		Echo   json.RawMessage            `json:"echo"`
	}
	if err := json.Unmarshal(b, &a); err != nil {
		s.violate("unreadable action frame %q", b)
		return nil
	}
	if len(a.Echo) == 0 {
		s.violate("action %s without echo", a.Action)
	}
	fail := func(code int, msg string) map[string]any {
		return map[string]any{"status": "failed", "retcode": code, "data": nil, "message": msg, "wording": msg, "echo": a.Echo}
	}
	ok := func(data any) map[string]any {
		return map[string]any{"status": "ok", "retcode": 0, "data": data, "echo": a.Echo}
	}
	switch a.Action {
	case "get_login_info":
		return ok(map[string]any{"user_id": SelfID, "nickname": Nickname})
	case "send_private_msg", "send_group_msg", "send_msg":
		key, prefix := "user_id", ""
		if a.Action == "send_group_msg" {
			key, prefix = "group_id", "group:"
		}
		var id int64
		if err := json.Unmarshal(a.Params[key], &id); err != nil || id == 0 {
			s.violate("%s: %s %s is not a number", a.Action, key, a.Params[key])
			return fail(1400, key+" must be a number")
		}
		segs, err := decodeMessage(a.Params["message"])
		if err != nil {
			s.violate("%s: %v", a.Action, err)
			return fail(1400, err.Error())
		}
		var text strings.Builder
		for _, sg := range segs {
			switch sg.Type {
			case "text":
				t, _ := sg.Data["text"].(string)
				text.WriteString(t)
			case "reply", "at", "face":
			case "image":
				f, _ := sg.Data["file"].(string)
				if !strings.HasPrefix(f, "base64://") && !strings.HasPrefix(f, "file://") && !strings.HasPrefix(f, "http") {
					s.violate("image segment with file %.40q", f)
				}
				if raw, ok := strings.CutPrefix(f, "base64://"); ok {
					if _, err := base64.StdEncoding.DecodeString(raw); err != nil {
						s.violate("image segment with bad base64")
					}
				}
			default:
				s.violate("unknown segment type %q", sg.Type)
			}
		}
		if len(segs) == 0 {
			s.violate("%s with an empty message", a.Action)
			return fail(1400, "empty message")
		}
		s.mu.Lock()
		s.nextID++
		mid := s.nextID
		s.sent = append(s.sent, Sent{ChatID: prefix + strconv.FormatInt(id, 10), MessageID: strconv.Itoa(mid), Text: text.String(), Segments: segs, At: time.Now()})
		s.mu.Unlock()
		return ok(map[string]any{"message_id": mid})
	}
	return fail(1404, "unsupported action "+a.Action)
}

func decodeMessage(raw json.RawMessage) ([]Segment, error) {
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []Segment{{Type: "text", Data: map[string]any{"text": s}}}, nil
	}
	var segs []Segment
	if err := json.Unmarshal(raw, &segs); err != nil {
		return nil, fmt.Errorf("message is neither a string nor a segment array: %w", err)
	}
	return segs, nil
}

// Emit queues a message event for the bot (sent as soon as a connection is
// up) and returns the chat id and message id the bot should report.
func (s *Server) Emit(m Message) (chatID, messageID string) {
	s.mu.Lock()
	s.nextID++
	mid := s.nextID
	var img string
	if m.Image != nil {
		img = s.srv.URL + "/img/" + strconv.Itoa(mid)
		s.images[strconv.Itoa(mid)] = m.Image
	}
	s.mu.Unlock()
	var segs []map[string]any
	var cq strings.Builder
	if m.ReplyTo != "" {
		segs = append(segs, seg("reply", "id", m.ReplyTo))
		cq.WriteString("[CQ:reply,id=" + m.ReplyTo + "]")
	}
	if m.AtBot {
		segs = append(segs, seg("at", "qq", strconv.Itoa(SelfID)), seg("text", "text", " "))
		cq.WriteString("[CQ:at,qq=" + strconv.Itoa(SelfID) + "] ")
	}
	if m.Text != "" {
		segs = append(segs, seg("text", "text", m.Text))
		cq.WriteString(EscapeCQ(m.Text))
	}
	if img != "" {
		segs = append(segs, map[string]any{"type": "image", "data": map[string]any{"file": fmt.Sprintf("%d.png", mid), "url": img}})
		cq.WriteString("[CQ:image,file=" + strconv.Itoa(mid) + ".png,url=" + EscapeCQParam(img) + "]")
	}
	nick := m.Nickname
	if nick == "" {
		nick = "user" + strconv.FormatInt(m.From, 10)
	}
	ev := map[string]any{"time": time.Now().Unix(), "self_id": SelfID, "post_type": "message", "message_id": mid,
		"user_id": m.From, "raw_message": cq.String(), "font": 0, "sender": map[string]any{"user_id": m.From, "nickname": nick}}
	if m.CQ {
		ev["message"], ev["message_format"] = cq.String(), "string"
	} else {
		ev["message"], ev["message_format"] = segs, "array"
	}
	if m.Group != 0 {
		ev["message_type"], ev["sub_type"], ev["group_id"] = "group", "normal", m.Group
		chatID = "group:" + strconv.FormatInt(m.Group, 10)
	} else {
		ev["message_type"], ev["sub_type"] = "private", "friend"
		chatID = strconv.FormatInt(m.From, 10)
	}
	b, _ := json.Marshal(ev)
	s.EmitRaw(b)
	return chatID, strconv.Itoa(mid)
}

// EmitRaw queues any frame for the bot.
func (s *Server) EmitRaw(b []byte) {
	s.mu.Lock()
	s.queue = append(s.queue, b)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Drop closes every live connection, as a restarting implementation would.
func (s *Server) Drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.CloseNow()
	}
}

func seg(typ, key, val string) map[string]any {
	return map[string]any{"type": typ, "data": map[string]any{key: val}}
}

// EscapeCQ escapes text outside CQ codes.
func EscapeCQ(s string) string {
	return strings.NewReplacer("&", "&amp;", "[", "&#91;", "]", "&#93;").Replace(s)
}

// EscapeCQParam escapes a CQ code parameter value.
func EscapeCQParam(s string) string {
	return strings.NewReplacer("&", "&amp;", "[", "&#91;", "]", "&#93;", ",", "&#44;").Replace(s)
}
