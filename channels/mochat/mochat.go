// Package mochat is the Mochat channel: an agent account on a Mochat
// (claw) server that answers in the sessions (one-to-one conversations)
// and panels (group channels) it is given, over Mochat's HTTP API and,
// with socketUrl set, its Socket.IO push.
//
// Receiving over HTTP (socketUrl unset, or the Socket.IO server not
// reachable): every session is watched with a long poll
// (POST /api/claw/sessions/watch with the session's cursor); panels are
// polled (POST /api/claw/groups/panels/messages) every pollIntervalMs.
// Over Socket.IO (socketio.go: Engine.IO v4 on a WebSocket, auth
// {"token": clawToken}): the channel subscribes its sessions, from their
// saved cursors (com.claw.im.subscribeSessions; the acknowledgement
// carries what was missed), and its panels (com.claw.im.subscribePanels),
// then handles claw.session.events and claw.panel.events as they come.
// "*" in sessions or panels takes every session or panel the account
// can see, found again every refreshIntervalMs. A session's cursor moves
// on, and is saved in the state folder, only after its messages were
// handed to the gateway, so a restart resumes where it stopped. The history
// of a session or panel never seen before is not answered, only what was
// written after the channel started (by the messages' timestamps); it is
// read over HTTP in both modes.
//
// Reply delay (replyDelayMode "non-mention", delay.go): panel messages
// that do not mention the bot are held and answered together once the
// panel is quiet for replyDelayMs, or at once with the next mention.
//
// Sending: POST /api/claw/sessions/send or /api/claw/groups/panels/send
// with the text (Mochat renders Markdown) and the message it answers.
// Mochat has no edits: the channel is not an Editor.
//
// Chat ids are the session id, or "panel:<panel id>" for panels; the
// sender id is the author's user id.
//
// Concurrency: Send uses only HTTP and may be called from any goroutine,
// concurrently with Run. Run receives on goroutines of its own: over
// Socket.IO, one reader feeding Run's loop; over HTTP, one watcher per
// session and one poller per panel, delivering concurrently for different
// chats. The shared state (cursors, dedup sets, held panel messages) is
// under locks, the reply delay's flusher is one more goroutine, and Run
// waits for all of them before it returns.
package mochat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/kit"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/redact"
)

// Config is channels.mochat.
type Config struct {
	configs.ChannelCommon
	// BaseURL is the Mochat server (default https://mochat.io).
	BaseURL string `json:"baseUrl"`
	// ClawToken is the agent account's token (sent as X-Claw-Token).
	ClawToken string `json:"clawToken"`
	// AgentUserID is the agent account's own user id: its messages are
	// skipped, and in panels it is how a mention of the bot is recognised.
	AgentUserID string `json:"agentUserId"`
	// Sessions lists the session ids to answer in; ["*"] is every session
	// the account can see.
	Sessions []string `json:"sessions"`
	// Panels lists the panel ids to answer in; ["*"] is every panel.
	Panels []string `json:"panels"`
	// GroupConfig: "mention" (default) answers in panels only messages
	// that mention agentUserId; the allowlist lists panel ids.
	channels.GroupConfig
	// WatchTimeoutMs is how long one session long poll waits (25000).
	WatchTimeoutMs int `json:"watchTimeoutMs"`
	// WatchLimit caps the events one long poll returns (100).
	WatchLimit int `json:"watchLimit"`
	// PanelLimit is how many recent messages a panel poll reads (50).
	PanelLimit int `json:"panelLimit"`
	// PollIntervalMs is the time between two polls of a panel (3000).
	PollIntervalMs int `json:"pollIntervalMs"`
	// RefreshIntervalMs is how often "*" looks for new sessions and
	// panels (60000).
	RefreshIntervalMs int `json:"refreshIntervalMs"`
	// SocketURL, when set, receives over Socket.IO at this server
	// (https://mochat.io); empty: HTTP long polling only.
	SocketURL string `json:"socketUrl"`
	// SocketPath is the Socket.IO path ("/socket.io").
	SocketPath string `json:"socketPath"`
	// SocketConnectTimeoutMs bounds the Socket.IO connect (10000); past
	// it the round falls back to HTTP polling.
	SocketConnectTimeoutMs int `json:"socketConnectTimeoutMs"`
	// ReplyDelayMode is "off" (default) or "non-mention": in panels,
	// messages that do not mention the bot are held and answered together
	// after ReplyDelayMs of quiet, or with the next mention. Other values
	// mean "off", as in the Python nanobot.
	ReplyDelayMode string `json:"replyDelayMode"`
	// ReplyDelayMs is the quiet period of the non-mention mode (120000).
	ReplyDelayMs int `json:"replyDelayMs"`
}

// DefaultBaseURL is the public Mochat server.
const DefaultBaseURL = "https://mochat.io"

// DefaultConfig is disabled, with the defaults of every option.
func DefaultConfig() Config {
	return Config{
		BaseURL: DefaultBaseURL, GroupConfig: channels.GroupConfig{GroupPolicy: channels.GroupMention},
		WatchTimeoutMs: 25000, WatchLimit: 100, PanelLimit: 50, PollIntervalMs: 3000, RefreshIntervalMs: 60000,
		SocketPath: "/socket.io", SocketConnectTimeoutMs: 10000, ReplyDelayMode: DelayOff, ReplyDelayMs: 120000,
	}
}

// Validate checks the config; errors name the key under channels.mochat and
// never contain the token.
func (c Config) Validate() error {
	var p channels.Problems
	p.Required(c.ClawToken, "clawToken is required (the agent account's token)")
	p.URL("baseUrl", c.BaseURL)
	p.Add(c.GroupConfig.Check())
	if len(c.Panels) > 0 && c.GroupPolicy == channels.GroupMention {
		p.Required(c.AgentUserID, `agentUserId is required with panels and groupPolicy "mention" (it is how a mention of the bot is recognised)`)
	}
	if c.SocketURL != "" {
		_, err := sioURL(c.SocketURL, c.SocketPath)
		p.Add(err)
	}
	if c.ReplyDelayMs < 0 {
		p.Addf("replyDelayMs: want 0 or more, got %d", c.ReplyDelayMs)
	}
	if len(c.Sessions) == 0 && len(c.Panels) == 0 {
		p.Addf(`sessions or panels: list at least one id, or ["*"] for all`)
	}
	for key, v := range map[string]int{"watchTimeoutMs": c.WatchTimeoutMs, "watchLimit": c.WatchLimit, "panelLimit": c.PanelLimit, "pollIntervalMs": c.PollIntervalMs, "refreshIntervalMs": c.RefreshIntervalMs, "socketConnectTimeoutMs": c.SocketConnectTimeoutMs} {
		if v <= 0 {
			p.Addf("%s: want a positive number, got %d", key, v)
		}
	}
	return p.Err()
}

// Factory registers the channel: registry.Register("mochat", mochat.Factory()).
func Factory() channels.Factory {
	return channels.NewFactory("mochat", DefaultConfig, New)
}

// Channel is the Mochat adapter.
type Channel struct {
	cfg    Config
	log    *slog.Logger
	redact *redact.Redactor
	api    *kit.Client
	http   *http.Client
	state  *cursors
	health channels.HealthState

	// Timing, fixed by New; tests in this package shorten them.
	backoffMin, backoffMax time.Duration

	started time.Time // set by New: messages before it are history

	delay *delayer // nil unless replyDelayMode is "non-mention"

	mu     sync.Mutex
	seen   map[string]*kit.Dedup // per session or panel
	groups map[string]string     // panel id -> group id, learnt from panel reads
}

var (
	_ channels.Channel        = (*Channel)(nil)
	_ channels.Limiter        = (*Channel)(nil)
	_ channels.HealthReporter = (*Channel)(nil)
)

// New builds the channel. It does no IO: Run connects.
func New(cfg Config, deps channels.Deps) (*Channel, error) {
	// An empty replyDelayMode is "off" and a replyDelayMs of 0 answers at
	// once: both are left as given.
	channels.FillDefaults(&cfg, DefaultConfig(), "ReplyDelayMode", "ReplyDelayMs")
	cfg.ClawToken, cfg.AgentUserID = strings.TrimSpace(cfg.ClawToken), strings.TrimSpace(cfg.AgentUserID)
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := deps.Logger()
	var delay *delayer
	switch mode := strings.TrimSpace(cfg.ReplyDelayMode); mode {
	case DelayNonMention:
		delay = newDelayer(time.Duration(cfg.ReplyDelayMs) * time.Millisecond)
	case "", DelayOff:
	default:
		log.Warn("mochat: unknown replyDelayMode; replies are not delayed", "reply_delay_mode", mode, "known", DelayOff+", "+DelayNonMention)
	}
	// A long poll may take watchTimeoutMs; the client allows that and more.
	hc := &http.Client{Timeout: time.Duration(cfg.WatchTimeoutMs)*time.Millisecond + 30*time.Second}
	c := &Channel{
		cfg: cfg, log: log, redact: deps.Redactor(cfg.ClawToken), http: hc,
		backoffMin: time.Second, backoffMax: time.Minute, seen: map[string]*kit.Dedup{}, groups: map[string]string{},
		started: time.Now(), delay: delay,
	}
	statePath := ""
	if deps.Paths.State != "" {
		statePath = filepath.Join(deps.Paths.State, "mochat-cursors.json")
	}
	c.state = loadCursors(statePath, log)
	c.api = &kit.Client{Base: cfg.BaseURL, HTTP: hc, Redact: c.redact, Check: kit.Envelope("code", "message", "200"),
		Auth: func(_ context.Context, r *http.Request) error {
			r.Header.Set("X-Claw-Token", cfg.ClawToken)
			return nil
		}}
	return c, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "mochat" }

// MessageLimit implements channels.Limiter (Mochat documents none; long
// answers are split at 4000 characters to stay readable).
func (c *Channel) MessageLimit() int { return 4000 }

// Health implements channels.HealthReporter.
func (c *Channel) Health() channels.Health { return c.health.Get() }

// Run watches the sessions and polls the panels, delivering messages to in
// until ctx ends; it returns nil then. A failed request restarts every
// watcher after a backoff; a rejected token ends Run.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	var wg sync.WaitGroup
	dctx, stop := context.WithCancel(ctx)
	if c.delay != nil {
		wg.Go(func() {
			if n := c.delay.run(dctx, func(m bus.Inbound) { c.deliverHeld(dctx, in, m) }); n > 0 {
				c.log.Warn("mochat: stopping with held panel messages unanswered", "messages", n)
			}
		})
	}
	loop := &channels.Loop{Name: "mochat", Log: c.log, Health: &c.health, Redact: c.redact.Error, Min: c.backoffMin, Max: c.backoffMax}
	err := loop.Run(ctx, func(ctx context.Context, up func()) error {
		if c.cfg.SocketURL != "" {
			err := c.servePush(ctx, in, up)
			if !errors.Is(err, errNoSocket) {
				return err
			}
			c.log.Warn("mochat: Socket.IO not reachable; receiving over HTTP polling until the next reconnect", "err", c.redact.Error(err))
		}
		return c.serve(ctx, in, up)
	})
	stop()
	wg.Wait()
	c.http.CloseIdleConnections()
	return err
}

// call posts body to path and decodes the envelope's data into out. A
// rejected token is fatal.
func (c *Channel) call(ctx context.Context, path string, body, out any) error {
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	err := c.api.Do(ctx, http.MethodPost, path, body, &env)
	if err != nil {
		if kit.Unauthorized(err) || isForbidden(err) {
			return channels.Fatal(fmt.Errorf("mochat: the server rejected clawToken: %w", err))
		}
		return err
	}
	if out == nil || len(env.Data) == 0 {
		return nil
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return fmt.Errorf("mochat: %s: unexpected answer: %w", path, err)
	}
	return nil
}

func isForbidden(err error) bool {
	var ae *kit.APIError
	if errors.As(err, &ae) && (ae.Status == http.StatusForbidden || ae.Code == "401" || ae.Code == "403") {
		return true
	}
	var pe *channels.PermanentError
	return errors.As(err, &pe) && errors.As(pe.Err, &ae) && ae.Status == http.StatusForbidden
}

// groupOf is the group of a panel, as its last read said.
func (c *Channel) groupOf(panel string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.groups[panel]
}

func (c *Channel) dedup(key string) *kit.Dedup {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.seen[key]
	if d == nil {
		d = kit.NewDedup(2000)
		c.seen[key] = d
	}
	return d
}
