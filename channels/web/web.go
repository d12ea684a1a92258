// Package web is the built-in web chat channel: a single-page chat UI served
// from embedded files and a WebSocket per browser tab, with replies streamed
// by in-place edits. It needs no third-party account, so a fresh install
// answers in the browser as soon as a provider key is set.
//
// Access: on a loopback address with allowFrom ["*"] (the default) no token
// is asked; anywhere else the browser must present the token stored in the
// state folder (compared in constant time, sent in the first WebSocket
// frame, never in a URL). The WebSocket handshake checks the Origin.
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
	"os"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/bus"
	"github.com/nanobot-go/nanobot/internal/atomicfile"
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
	token string // "" = no token needed

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
	c := &Channel{cfg: cfg, log: log, conns: map[string]map[*conn]bool{}}
	if cfg.MaxMessageChars <= 0 {
		c.cfg.MaxMessageChars = 32000
	}
	open := len(cfg.AllowFrom) == 1 && cfg.AllowFrom[0] == "*"
	if cfg.RequireToken || !o.Loopback || !open {
		tok, err := loadToken(o.TokenFile)
		if err != nil {
			return nil, err
		}
		c.token = tok
	}
	return c, nil
}

// Token returns the access token ("" when none is needed).
func (c *Channel) Token() string { return c.token }

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
	if err := atomicfile.Write(path, []byte(tok+"\n"), 0o600); err != nil {
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
	if c.token != "" && subtle.ConstantTimeCompare([]byte(hello.Token), []byte(c.token)) != 1 {
		_ = wsjson.Write(ctx, ws, Frame{Type: "error", Text: "wrong or missing access token"})
		ws.Close(websocket.StatusPolicyViolation, "unauthorized")
		c.log.Warn("web chat: wrong token", "remote", r.RemoteAddr)
		return
	}
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
			MessageID: msgID, ReceivedAt: time.Now(),
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
