// Package web is the built-in web chat channel: a single-page chat UI served
// from embedded files and a WebSocket per browser tab, with replies streamed
// by in-place edits. It needs no third-party account, so a fresh install
// answers in the browser as soon as a provider key is set.
//
// Access: every connection must present the instance's access token (the
// owner key of internal/owner, kept in the state folder's web_token; sent
// in the first WebSocket frame, compared in constant time, never in a URL)
// or come from a browser signed in to the web workbench (SetLogin: its
// HttpOnly, SameSite=Strict cookie on the handshake), from 127.0.0.1 too:
// the agent's own commands and other users of the machine reach a loopback
// port just as the owner's browser does. The WebSocket handshake also
// requires the Origin to match the Host. Connections admitted either way
// are the owner's: their messages carry bus.Inbound.Admin.
//
// A tab may open a temporary chat (temporary.go): its turns run with the
// agent's tools as usual but are never stored, and the conversation is
// forgotten when its last tab closes.
//
// Send, Edit and Typing may be called concurrently with each other and with
// the HTTP handlers.
package web

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/owner"
)

// Config is channels.web.
type Config struct {
	configs.ChannelCommon
	// RequireToken is kept for old configs: the token (or a workbench
	// login) is required on every connection whatever it says.
	RequireToken bool `json:"requireToken"`
	// MaxMessageChars caps one message from the browser.
	MaxMessageChars int `json:"maxMessageChars"`
}

// DefaultConfig is enabled; who may connect is decided by the token or a
// workbench login, so allowFrom is open.
func DefaultConfig() Config {
	return Config{ChannelCommon: configs.ChannelCommon{Enabled: true, AllowFrom: []string{"*"}}, MaxMessageChars: 32000}
}

//go:embed static
var static embed.FS

// Channel is the web chat.
type Channel struct {
	cfg   Config
	log   *slog.Logger
	owner *owner.Key

	mu    sync.Mutex
	inbox channels.Inbox
	// running is closed while Run holds an inbox, and replaced by an open
	// one when Run returns: a message that arrives first waits on it.
	running chan struct{}
	// ended is closed when Run returns and replaced by an open one when Run
	// starts: a message that arrives while the gateway stops is refused at
	// once instead of waiting for a Run that is not coming.
	ended chan struct{}
	conns map[string]map[*conn]bool // chat id -> connections
	// temps are the open temporary chats (see temporary.go).
	temps map[string]*tempChat
	seq   int
	// loggedIn, when set, admits a WebSocket whose handshake carries a
	// workbench login (SetLogin).
	loggedIn func(r *http.Request) bool
}

var (
	_ channels.Channel = (*Channel)(nil)
	_ channels.Editor  = (*Channel)(nil)
	_ channels.Typer   = (*Channel)(nil)
	_ channels.Limiter = (*Channel)(nil)

	_ channels.StreamEnder = (*Channel)(nil)
)

// Options are what the gateway knows that the config does not.
type Options struct {
	// TokenFile stores the access token (created 0600 when missing; see
	// internal/owner).
	TokenFile string
	Log       *slog.Logger
}

// New builds the web channel, loading (or creating) the access token.
func New(cfg Config, o Options) (*Channel, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	key, err := owner.Load(o.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	c := &Channel{cfg: cfg, log: log, owner: key, conns: map[string]map[*conn]bool{}, temps: map[string]*tempChat{},
		running: make(chan struct{}), ended: make(chan struct{})}
	if cfg.MaxMessageChars <= 0 {
		c.cfg.MaxMessageChars = 32000
	}
	return c, nil
}

// Token returns the access token a connection presents.
func (c *Channel) Token() string { return c.owner.Token() }

// SetLogin makes the channel admit a WebSocket whose handshake request
// loggedIn accepts (the web workbench's login cookie) as it admits one
// that presents the token: a browser signed in to the workbench beyond
// loopback can then chat without ever seeing the token. Call it before
// the HTTP server serves; the Origin check stays.
func (c *Channel) SetLogin(loggedIn func(r *http.Request) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loggedIn = loggedIn
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "web" }

// DefaultAllowFrom implements channels.AllowDefaulter: the web chat admits
// whoever passed its sign-in unless allowFrom says otherwise.
func (c *Channel) DefaultAllowFrom() []string { return DefaultConfig().AllowFrom }

// Run makes the channel accept messages until ctx ends; the HTTP server
// serves the connections.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	c.mu.Lock()
	c.inbox = in
	close(c.running)
	c.ended = make(chan struct{})
	c.mu.Unlock()
	<-ctx.Done()
	c.mu.Lock()
	c.inbox = nil
	c.running = make(chan struct{})
	close(c.ended)
	for _, set := range c.conns {
		for cn := range set {
			cn.ws.Close(websocket.StatusGoingAway, "gateway stopping")
		}
	}
	c.mu.Unlock()
	return nil
}

// startWait bounds how long a message that arrives before Run (a tab that
// reconnected the moment the gateway started) waits for it.
const startWait = 10 * time.Second

// testHookWaitInbox, when a test sets it, is called as a message starts
// waiting for Run.
var testHookWaitInbox func()

// waitInbox returns the inbox Run holds, waiting up to startWait for Run
// to start; nil at once when Run has ended (the gateway is stopping), and
// nil when Run does not start in time.
func (c *Channel) waitInbox(ctx context.Context) channels.Inbox {
	c.mu.Lock()
	in, running, ended := c.inbox, c.running, c.ended
	c.mu.Unlock()
	if in != nil {
		return in
	}
	select {
	case <-ended:
		return nil
	default:
	}
	if testHookWaitInbox != nil {
		testHookWaitInbox()
	}
	t := time.NewTimer(startWait)
	defer t.Stop()
	select {
	case <-running:
	case <-t.C:
	case <-ctx.Done():
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inbox
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
	// Temporary, in the auth frame, opens a chat that is never stored
	// (see temporary.go); hello repeats it.
	Temporary bool `json:"temporary,omitempty"`
}

// Handler serves the UI at / (and /chat) and the WebSocket at /ws.
func (c *Channel) Handler() http.Handler {
	mux := http.NewServeMux()
	sub, _ := fs.Sub(static, "static")
	files := http.FileServerFS(sub)
	headers := func(w http.ResponseWriter) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
	}
	mux.Handle("GET /", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers(w)
		files.ServeHTTP(w, r)
	}))
	// The page also at /chat: the gateway serves its workbench at "/".
	mux.HandleFunc("GET /chat", func(w http.ResponseWriter, r *http.Request) {
		headers(w)
		http.ServeFileFS(w, r, sub, "index.html")
	})
	mux.HandleFunc("GET /ws", c.serveWS)
	return mux
}
