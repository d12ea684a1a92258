// Package web is the built-in web chat channel: a single-page chat UI served
// from embedded files and a WebSocket per browser tab, with replies streamed
// by in-place edits. It needs no third-party account, so a fresh install
// answers in the browser as soon as a provider key is set.
//
// Access is decided per connection. With a loopback bind and allowFrom
// ["*"] (the default) a genuine loopback browser needs no token: the peer
// address is loopback, the Host header is a loopback name (localhost,
// *.localhost, 127.0.0.0/8, [::1]), the Origin, when sent, is a loopback
// name too, and no proxy forwarding header is present. Every other
// connection (a DNS-rebinding page whose name resolves to 127.0.0.1, a
// reverse proxy on the same machine, any non-loopback bind) must present
// the token stored in the state folder (compared in constant time, sent in
// the first WebSocket frame, never in a URL). The WebSocket handshake also
// requires the Origin to match the Host. Connections admitted either way
// are admin connections: their messages carry bus.Inbound.Admin.
//
// Send, Edit and Typing may be called concurrently with each other and with
// the HTTP handlers.
package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/bus"
)

// Config is channels.web.
type Config struct {
	configs.ChannelCommon
	// RequireToken forces the token even on loopback.
	RequireToken bool `json:"requireToken"`
	// MaxMessageChars caps one message from the browser.
	MaxMessageChars int `json:"maxMessageChars"`
}

// DefaultConfig is enabled and open to everyone on loopback.
func DefaultConfig() Config {
	return Config{ChannelCommon: configs.ChannelCommon{Enabled: true, AllowFrom: []string{"*"}}, MaxMessageChars: 32000}
}

//go:embed static
var static embed.FS

// Channel is the web chat.
type Channel struct {
	cfg   Config
	log   *slog.Logger
	token string // "" = no token file: only genuine loopback browsers
	// tokenAlways asks the token even from genuine loopback browsers.
	tokenAlways bool
	// loopbackBind: the server listens on loopback only, so a genuine
	// loopback browser may go without the token.
	loopbackBind bool

	mu    sync.Mutex
	inbox channels.Inbox
	conns map[string]map[*conn]bool // chat id -> connections
	seq   int
}

var (
	_ channels.Channel = (*Channel)(nil)
	_ channels.Editor  = (*Channel)(nil)
	_ channels.Typer   = (*Channel)(nil)
	_ channels.Limiter = (*Channel)(nil)
)

// Options are what the gateway knows that the config does not.
type Options struct {
	// Loopback is true when the HTTP server listens on loopback only.
	Loopback bool
	// TokenFile stores the access token (created 0600 when missing).
	TokenFile string
	Log       *slog.Logger
}

// New builds the web channel. It returns the token the browser needs, or ""
// when none is required.
func New(cfg Config, o Options) (*Channel, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Channel{cfg: cfg, log: log, conns: map[string]map[*conn]bool{}, loopbackBind: o.Loopback}
	if cfg.MaxMessageChars <= 0 {
		c.cfg.MaxMessageChars = 32000
	}
	open := len(cfg.AllowFrom) == 1 && cfg.AllowFrom[0] == "*"
	c.tokenAlways = cfg.RequireToken || !o.Loopback || !open
	// Even when loopback browsers go without it, the token is what any
	// other connection (an allowedHosts name, a proxy) must show.
	if c.tokenAlways || o.TokenFile != "" {
		tok, err := loadToken(o.TokenFile)
		if err != nil {
			return nil, err
		}
		c.token = tok
	}
	return c, nil
}

// Token returns the access token when every browser needs it, or "" when
// genuine loopback browsers go without (others then need the token in the
// token file).
func (c *Channel) Token() string {
	if c.tokenAlways {
		return c.token
	}
	return ""
}

// genuineLoopback reports whether r comes from a browser on this machine
// that asked for a loopback name, as opposed to a page on another site whose
// name was re-pointed at 127.0.0.1 (DNS rebinding) or a reverse proxy.
func (c *Channel) genuineLoopback(r *http.Request) bool {
	if !c.loopbackBind || !channels.IsLoopbackPeer(r.RemoteAddr) || !channels.IsLoopbackHost(channels.HostName(r.Host)) {
		return false
	}
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Real-Ip"} {
		if r.Header.Get(h) != "" {
			return false
		}
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true // not a browser page (curl, a script on this machine)
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && channels.IsLoopbackHost(channels.HostName(u.Host))
}

func loadToken(path string) (string, error) {
	if path == "" {
		return "", errors.New("web: a token is required but no token file is configured")
	}
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 16 {
		return strings.TrimSpace(string(b)), nil
	}
	var raw [24]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(raw[:])
	if err := configs.WriteFileAtomic(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("web: store token: %w", err)
	}
	return tok, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "web" }

// Run makes the channel accept messages until ctx ends; the HTTP server
// serves the connections.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	c.mu.Lock()
	c.inbox = in
	c.mu.Unlock()
	<-ctx.Done()
	c.mu.Lock()
	c.inbox = nil
	for _, set := range c.conns {
		for cn := range set {
			cn.ws.Close(websocket.StatusGoingAway, "gateway stopping")
		}
	}
	c.mu.Unlock()
	return nil
}

// MessageLimit implements channels.Limiter: the browser has no limit worth
// splitting for.
func (c *Channel) MessageLimit() int { return 200000 }

// EditInterval implements channels.Editor.
func (c *Channel) EditInterval() time.Duration { return 80 * time.Millisecond }

// Frame is one WebSocket message, both directions.
type Frame struct {
	Type  string `json:"type"` // auth, message | hello, message, edit, typing, hint, error
	ID    string `json:"id,omitempty"`
	Text  string `json:"text,omitempty"`
	Final bool   `json:"final,omitempty"`
	Chat  string `json:"chat,omitempty"`
	Token string `json:"token,omitempty"`
}

// Send implements channels.Channel.
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	c.mu.Lock()
	c.seq++
	id := fmt.Sprintf("m%d", c.seq)
	c.mu.Unlock()
	typ := "message"
	if m.IsError {
		typ = "error"
	}
	if err := c.broadcast(ctx, m.ChatID, Frame{Type: typ, ID: id, Text: m.Content, Final: m.Final}); err != nil {
		return channels.MessageRef{}, err
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: id}, nil
}

// Edit implements channels.Editor.
func (c *Channel) Edit(ctx context.Context, ref channels.MessageRef, m bus.Outbound) error {
	return c.broadcast(ctx, ref.ChatID, Frame{Type: "edit", ID: ref.MessageID, Text: m.Content, Final: m.Final})
}

// Typing implements channels.Typer.
func (c *Channel) Typing(ctx context.Context, chatID string, _ map[string]any) error {
	return c.broadcast(ctx, chatID, Frame{Type: "typing"})
}

// broadcast writes f to every tab of the chat. A chat with no open tab is a
// permanent failure (the user left); the reply stays in the session.
func (c *Channel) broadcast(ctx context.Context, chat string, f Frame) error {
	c.mu.Lock()
	var targets []*conn
	for cn := range c.conns[chat] {
		targets = append(targets, cn)
	}
	c.mu.Unlock()
	if len(targets) == 0 {
		return &channels.PermanentError{Err: fmt.Errorf("web: no open tab for chat %s", chat)}
	}
	var errs []error
	for _, cn := range targets {
		if err := cn.write(ctx, f); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == len(targets) {
		return errors.Join(errs...)
	}
	return nil
}

// Handler serves the UI at / and the WebSocket at /ws.
func (c *Channel) Handler() http.Handler {
	mux := http.NewServeMux()
	sub, _ := fs.Sub(static, "static")
	files := http.FileServerFS(sub)
	mux.Handle("GET /", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		files.ServeHTTP(w, r)
	}))
	mux.HandleFunc("GET /ws", c.serveWS)
	return mux
}

type conn struct {
	ws   *websocket.Conn
	chat string
	wmu  sync.Mutex
}

func (cn *conn) write(ctx context.Context, f Frame) error {
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return wsjson.Write(ctx, cn.ws, f)
}

func (c *Channel) serveWS(w http.ResponseWriter, r *http.Request) {
	genuine := c.genuineLoopback(r)
	// Accept verifies that Origin matches the Host (no cross-site sockets).
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		c.log.Warn("websocket rejected", "err", err, "remote", r.RemoteAddr)
		return
	}
	ws.SetReadLimit(int64(c.cfg.MaxMessageChars)*4 + 1024)
	ctx := r.Context()
	defer ws.CloseNow()

	// First frame: {"type":"auth","chat":"<browser id>","token":"..."}.
	var hello Frame
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = wsjson.Read(actx, ws, &hello)
	cancel()
	if err != nil || hello.Type != "auth" {
		ws.Close(websocket.StatusPolicyViolation, "expected auth frame")
		return
	}
	tokenOK := c.token != "" && subtle.ConstantTimeCompare([]byte(hello.Token), []byte(c.token)) == 1
	if !tokenOK && (c.tokenAlways || !genuine) {
		_ = wsjson.Write(ctx, ws, Frame{Type: "error", Text: "wrong or missing access token"})
		ws.Close(websocket.StatusPolicyViolation, "unauthorized")
		c.log.Warn("web chat: wrong or missing token", "remote", r.RemoteAddr, "host", truncate(r.Host, 100), "genuine_loopback", genuine)
		return
	}
	// Both ways in (this machine's own browser, or the token) are the
	// owner's: such a connection may approve pairing codes.
	admin := genuine || tokenOK
	chat := sanitizeChat(hello.Chat)
	cn := &conn{ws: ws, chat: chat}
	c.mu.Lock()
	if c.conns[chat] == nil {
		c.conns[chat] = map[*conn]bool{}
	}
	c.conns[chat][cn] = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.conns[chat], cn)
		if len(c.conns[chat]) == 0 {
			delete(c.conns, chat)
		}
		c.mu.Unlock()
	}()
	_ = cn.write(ctx, Frame{Type: "hello", Chat: chat})

	for {
		var f Frame
		if err := wsjson.Read(ctx, ws, &f); err != nil {
			return
		}
		if f.Type != "message" {
			continue // unknown frames are ignored, not fatal
		}
		text := strings.TrimSpace(f.Text)
		if text == "" {
			continue
		}
		if len([]rune(text)) > c.cfg.MaxMessageChars {
			_ = cn.write(ctx, Frame{Type: "error", Text: fmt.Sprintf("message too long (max %d characters)", c.cfg.MaxMessageChars)})
			continue
		}
		c.mu.Lock()
		in := c.inbox
		c.seq++
		msgID := fmt.Sprintf("u%d-%d", time.Now().UnixNano(), c.seq)
		c.mu.Unlock()
		if in == nil {
			_ = cn.write(ctx, Frame{Type: "error", Text: "the gateway is not ready yet"})
			continue
		}
		err := in.Deliver(ctx, bus.Inbound{
			Channel: "web", SenderID: chat, ChatID: chat, Content: text,
			MessageID: msgID, ReceivedAt: time.Now(), Admin: admin,
		})
		if err != nil && !errors.Is(err, channels.ErrDenied) {
			_ = cn.write(ctx, Frame{Type: "error", Text: "could not queue the message; please retry"})
		}
	}
}

// sanitizeChat keeps browser-chosen ids short and safe; an empty one gets a
// random id.
func sanitizeChat(s string) string {
	var b strings.Builder
	for _, r := range s {
		if (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') || r == '-' || r == '_' {
			b.WriteRune(r)
		}
		if b.Len() >= 64 {
			break
		}
	}
	if b.Len() < 8 {
		var raw [8]byte
		_, _ = rand.Read(raw[:])
		return hex.EncodeToString(raw[:])
	}
	return b.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
