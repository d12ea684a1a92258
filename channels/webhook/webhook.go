// Package webhook is the generic signed webhook channel: scripts, Home
// Assistant, n8n or a CI job talk to the agent with a plain HTTP POST.
//
// Every hook is a name with its own shared secret. A caller POSTs JSON
// ({"chatId", "senderId", "text", "id"?}) to /hooks/<name> on the gateway's
// HTTP server (the channel is a channels.WebhookHandler) with two headers:
//
//	X-Nanobot-Timestamp: <unix seconds>
//	X-Nanobot-Signature: sha256=<hex HMAC-SHA256(secret, timestamp + "." + body)>
//
// The handler checks, in this order and before it parses the body as JSON:
// the body size (413), the timestamp (401 unless within MaxSkew of the
// gateway's clock), the signature (401, compared in constant time) and that
// the same signature, or the same message id, was not seen within the
// window (409). The replay memory is bounded: when it is full of signatures
// that are still valid, new requests get 429 until the oldest expire. It is
// kept in the instance's state folder (ReplayFileName, see internal/replay:
// hashes only, mode 0600, each entry on disk before its request is taken),
// so a restart of the gateway does not open the window again; with no
// state folder (tests, no instance) it is in memory only. A request the
// gateway could not take (503) is forgotten again, so the caller may send
// the same bytes once more.
//
// Answers: a hook with replyUrl gets the agent's messages POSTed there,
// signed the same way with the hook's secret (the dispatcher retries failed
// POSTs; 4xx answers other than 408/429 are not retried). A hook with sync
// set holds the request open until the turn's final answer and returns it in
// the response (200), or 504 once syncTimeoutS passes; messages nobody waits
// for (a late answer, a cron job's output) then go to replyUrl when there is
// one and are dropped with a log line otherwise.
//
// Access: a hook is authenticated by its secret, so every sender on it is
// allowed (the channel is a channels.SenderAuthenticator and the gateway's
// allowFrom gate admits its messages) unless the hook sets allowFrom, which
// then lists the senderIds it accepts (others get 403). Chat and sender ids
// are namespaced by hook ("<hook>:<chatId>"), so the session of one hook's
// chat is never another hook's.
//
// Concurrency: the handler, Send and Run are called concurrently; shared
// state is behind the channel's mutex and the replay set's own.
package webhook

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/kit"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/redact"
	"github.com/nanobot-go/nanobot/internal/replay"
)

// Name is the channel's name in config and session keys.
const Name = "webhook"

// Config is channels.webhook.
type Config struct {
	configs.ChannelCommon
	// Hooks maps a hook name (the last part of /hooks/<name>: letters,
	// digits, '-' and '_') to its settings.
	Hooks map[string]Hook `json:"hooks"`
	// MaxBodyBytes caps one request body (default 64 KiB).
	MaxBodyBytes int64 `json:"maxBodyBytes"`
}

// Hook is one caller of the channel.
type Hook struct {
	// Secret signs requests both ways (HMAC-SHA256); at least 16
	// characters. Generate one with `openssl rand -hex 32`.
	Secret string `json:"secret"`
	// ReplyURL receives the agent's messages as signed POSTs. Required
	// unless Sync is set.
	ReplyURL string `json:"replyUrl"`
	// Sync holds each request open until the turn's final answer and
	// returns it in the response.
	Sync bool `json:"sync"`
	// SyncTimeoutS bounds that wait in seconds (default 120); the request
	// then gets 504 and the answer goes to ReplyURL, if any.
	SyncTimeoutS int `json:"syncTimeoutS"`
	// AllowFrom lists the senderIds the hook accepts; empty accepts every
	// sender (the secret is the check), "*" too.
	AllowFrom []string `json:"allowFrom"`
}

// Defaults.
const (
	DefaultMaxBodyBytes = 64 << 10
	DefaultSyncTimeout  = 120 * time.Second
	// MaxSkew is how far a request's timestamp may be from the gateway's
	// clock, either way.
	MaxSkew = 5 * time.Minute
	// MinSecretLen is the shortest secret accepted.
	MinSecretLen = 16
	// ReplayFileName is the replay memory's file in the state folder.
	ReplayFileName = "webhook-replay"
)

// DefaultConfig is disabled, with the defaults of every option.
func DefaultConfig() Config { return Config{MaxBodyBytes: DefaultMaxBodyBytes} }

// hookNameChars and a length limit check hook names; a bounded repeat in
// the pattern would compile to 64 copies of the class.
var hookNameChars = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Validate checks the config; errors name the key under channels.webhook
// and never contain a secret.
func (c Config) Validate() error {
	var p channels.Problems
	if len(c.AllowFrom) > 0 {
		p.Addf("allowFrom: not used by the webhook channel (every hook is authenticated by its secret); set hooks.<name>.allowFrom instead")
	}
	if len(c.Hooks) == 0 {
		p.Addf(`hooks: at least one hook is required ({"hooks": {"ha": {"secret": "...", "sync": true}}})`)
	}
	p.NonNegative("maxBodyBytes", c.MaxBodyBytes)
	for _, name := range sortedNames(c.Hooks) {
		h := c.Hooks[name]
		key := "hooks." + name
		if len(name) > 64 || !hookNameChars.MatchString(name) {
			p.Addf("%s: the name may hold only letters, digits, '-' and '_' (it is part of the URL /hooks/<name>)", key)
		}
		if len(strings.TrimSpace(h.Secret)) < MinSecretLen {
			p.Addf("%s.secret: at least %d characters required (generate one with `openssl rand -hex 32`)", key, MinSecretLen)
		}
		if h.ReplyURL != "" {
			p.URL(key+".replyUrl", h.ReplyURL)
		} else if !h.Sync {
			p.Addf("%s: set replyUrl, or sync: true, so that answers have somewhere to go", key)
		}
		p.NonNegative(key+".syncTimeoutS", int64(h.SyncTimeoutS))
	}
	return p.Err()
}

func sortedNames(m map[string]Hook) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Factory registers the channel: registry.Register("webhook", webhook.Factory()).
func Factory() channels.Factory {
	return channels.NewFactory(Name, DefaultConfig, New)
}

// Channel is the webhook adapter.
type Channel struct {
	cfg    Config
	log    *slog.Logger
	redact *redact.Redactor
	out    *kit.Client // reply POSTs
	hc     *http.Client
	replay *replay.Set // signatures and message ids seen within the window
	now    func() time.Time

	health channels.HealthState

	mu      sync.Mutex
	inbox   channels.Inbox     // set while Run runs
	waiters map[string]*waiter // inbound message id -> a sync request waiting for its answer
}

var (
	_ channels.Channel             = (*Channel)(nil)
	_ channels.Limiter             = (*Channel)(nil)
	_ channels.HealthReporter      = (*Channel)(nil)
	_ channels.WebhookHandler      = (*Channel)(nil)
	_ channels.SenderAuthenticator = (*Channel)(nil)
)

// New builds the channel. It does no IO.
func New(cfg Config, deps channels.Deps) (*Channel, error) {
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var secrets []string
	hooks := make(map[string]Hook, len(cfg.Hooks)) // the caller's map stays as it was
	for name, h := range cfg.Hooks {
		h.Secret = strings.TrimSpace(h.Secret)
		if h.SyncTimeoutS == 0 {
			h.SyncTimeoutS = int(DefaultSyncTimeout / time.Second)
		}
		hooks[name] = h
		secrets = append(secrets, h.Secret)
	}
	cfg.Hooks = hooks
	rd := deps.Redactor(secrets...)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()}
	c := &Channel{
		cfg:     cfg,
		log:     deps.Logger(),
		redact:  rd,
		hc:      hc,
		out:     &kit.Client{HTTP: hc, Redact: rd, MaxBody: 1 << 20},
		now:     time.Now,
		waiters: map[string]*waiter{},
	}
	replayFile := "" // memory only
	if deps.Paths.State != "" {
		replayFile = filepath.Join(deps.Paths.State, ReplayFileName)
	}
	c.replay = replay.New(replayFile, replay.Options{Max: maxReplayEntries, Log: c.log, Now: func() time.Time { return c.now() }})
	return c, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return Name }

// MessageLimit implements channels.Limiter: an answer is never split (a
// sync answer is one response, a replyUrl POST one request).
func (c *Channel) MessageLimit() int { return 1 << 20 }

// Health implements channels.HealthReporter: connected while Run runs.
func (c *Channel) Health() channels.Health { return c.health.Get() }

// AuthenticatesSenders implements channels.SenderAuthenticator.
func (c *Channel) AuthenticatesSenders() bool { return true }

// WebhookPath implements channels.WebhookHandler.
func (c *Channel) WebhookPath() string { return "/hooks/" }

// Run takes requests until ctx ends; the handler answers 503 before and
// after. It fails when the replay memory's file cannot be read: taking
// requests without it would accept replays.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	if err := c.replay.Load(); err != nil {
		return fmt.Errorf("webhook: replay memory: %w", err)
	}
	c.mu.Lock()
	c.inbox = in
	c.mu.Unlock()
	c.health.Set(channels.StateConnected, "")
	c.log.Info("webhook: accepting requests", "hooks", sortedNames(c.cfg.Hooks))
	<-ctx.Done()
	c.mu.Lock()
	c.inbox = nil
	c.mu.Unlock()
	c.health.Set(channels.StateStopped, "")
	c.hc.CloseIdleConnections()
	if err := c.replay.Close(); err != nil {
		c.log.Warn("webhook: closing the replay memory", "err", err)
	}
	return nil
}

func (c *Channel) currentInbox() channels.Inbox {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inbox
}
