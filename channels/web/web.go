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

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
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
	Type  string `json:"type"`         // auth, message | hello, message, edit, typing, hint, error
	ID    string `json:"id,omitempty"` // the message id; from the browser optional (used for de-duplication)
	Text  string `json:"text,omitempty"`
	Final bool   `json:"final,omitempty"`
	Chat  string `json:"chat,omitempty"`
	Token string `json:"token,omitempty"`
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
