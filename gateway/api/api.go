// Package api serves the OpenAI-compatible API under /v1 on the gateway's
// HTTP server: GET /v1/models, POST /v1/chat/completions and POST
// /v1/responses (streaming and not, JSON or multipart with files), so
// scripts and OpenAI front-ends (Open WebUI, LibreChat) reach the agent.
//
// The API is a channel named "api" (channels.Channel, Editor, StreamEnder,
// WebhookHandler): each request gets a fresh chat id, its last user message
// goes through the gateway's inbox like any chat message (journal, per
// session FIFO, the global turn cap), and the dispatcher's Send/Edit calls
// for that chat id are the answer. Tool hints, typing and progress notes
// never reach the client. A request with a session id ("session_id" in the
// body or the X-Session-Id header) continues the server-side session
// "api:<id>"; without one the request is stateless: the messages sent are
// the whole conversation and nothing is stored. A response (/v1/responses)
// starts or continues (previous_response_id) the session
// "api:resp-<root id>" unless store is false (see store.go). Images (data
// URLs, multipart files) are saved to the media folder and reach the agent
// as the message's media. A client that goes away stops its turn (a /stop
// for its session).
//
// Access: every request needs "Authorization: Bearer <key>" (compared in
// constant time), from 127.0.0.1 too: the agent's own commands and other
// users of the machine reach a loopback port as any client does. The
// accepted keys are the instance's access token (internal/owner), the
// configured api.apiKey, and api.apiKeys. A key of api.apiKeys has sessions
// and stored responses of its own: another key cannot continue them (it
// gets "not found"), unless api.shareSessions puts every key in one. Browser
// pages may call only from the configured CORS origins, and only with a
// JSON body (so a foreign page cannot post a "simple" form request to a
// local gateway).
//
// Limits: an optional token bucket per key (429 with Retry-After), a cap on
// the turns in flight with a bounded wait for a free one (429
// agent_saturated, admit.go), and 503 for every turn while no LLM provider
// is configured.
//
// Concurrency: the handler, Send, Edit and StreamEnded are called
// concurrently; all shared state is behind one mutex per channel and one
// per request, the record of stored conversations behind its own, each
// key's rate limiter locks itself, and the turn slots are a channel.
package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/internal/owner"
)

// Name is the channel's name: the Channel of the messages it delivers and
// the prefix of its session keys.
const Name = "api"

// Config is what the gateway hands the API.
type Config struct {
	// Keys are accepted API keys that share the owner's sessions
	// (api.apiKey; with api.shareSessions every key).
	Keys []string
	// ClientKeys are accepted API keys each with sessions and stored
	// responses of its own (api.apiKeys).
	ClientKeys []string
	// Owner is the instance's owner key: its access token is accepted as
	// an API key sharing the owner's sessions (nil: not accepted).
	Owner *owner.Key
	// CORSOrigins are the browser origins allowed to call; "*" any.
	CORSOrigins []string
	// MaxBodyBytes bounds a JSON request body (images in data URLs
	// included) and each text field of a multipart one.
	MaxBodyBytes int64
	// MaxUploadBytes bounds a multipart/form-data body (default 20 MiB).
	MaxUploadBytes int64
	// RequestsPerMinute is each key's rate limit for requests that run a
	// turn; 0 is none.
	RequestsPerMinute int
	// MediaDir is the gateway's media folder; uploads go to its "inbound"
	// folder. Empty: requests with images or files are refused.
	MediaDir string
	// StateDir holds the record of stored response conversations. Empty:
	// kept in memory only (tests).
	StateDir string
	// Unconfigured, when set, says why no LLM provider is configured: every
	// request that would run a turn is answered 503 with it.
	Unconfigured string
	// Model is the agent's model (agents.defaults.model), the model id the
	// API lists; "nanobot" is accepted as well.
	Model string
	// MaxConcurrent caps the turns this API runs at once (default 8);
	// QueueTimeout is how long a request waits for one of them to end
	// before it is answered 429 (0: at once).
	MaxConcurrent int
	QueueTimeout  time.Duration
	// StopTimeout bounds how long delivering a disconnected client's /stop
	// may take (default 5 s).
	StopTimeout time.Duration
	Log         *slog.Logger
}

// AliasModel is the model id accepted besides Config.Model.
const AliasModel = "nanobot"

// Channel is the API. New builds it; the gateway runs it as a channel and
// mounts its handler at WebhookPath.
type Channel struct {
	cfg  Config
	log  *slog.Logger
	keys []apiKey

	started     chan struct{} // closed when Run first runs
	startedOnce sync.Once

	limits *limiters // nil: no rate limit
	slots  *turnSlots
	convs  *conversations

	mu      sync.Mutex
	inbox   channels.Inbox // set while Run runs
	waiters map[string]*waiter
}

// startWait bounds how long a request that arrives while the gateway is
// still starting waits for the API channel to run.
const startWait = 10 * time.Second

var (
	_ channels.Channel        = (*Channel)(nil)
	_ channels.Editor         = (*Channel)(nil)
	_ channels.Limiter        = (*Channel)(nil)
	_ channels.StreamEnder    = (*Channel)(nil)
	_ channels.WebhookHandler = (*Channel)(nil)
)

// New returns the API channel; it does no IO.
func New(cfg Config) *Channel {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = 5 * time.Second
	}
	c := &Channel{cfg: cfg, log: cfg.Log.With("channel", Name), waiters: map[string]*waiter{}, started: make(chan struct{})}
	if cfg.MaxUploadBytes <= 0 {
		cfg.MaxUploadBytes = 20 << 20
	}
	c.cfg = cfg
	c.keys = newKeys(cfg)
	buckets := make([][]byte, len(c.keys))
	for i, k := range c.keys {
		buckets[i] = k.digest
	}
	c.limits = newLimiters(cfg.RequestsPerMinute, buckets)
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = 8
	}
	c.slots = newTurnSlots(cfg.MaxConcurrent, cfg.QueueTimeout)
	c.convs = &conversations{}
	if cfg.StateDir != "" {
		c.convs.path = filepath.Join(cfg.StateDir, conversationsFile)
	}
	return c
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return Name }

// Run makes the API take requests until ctx ends.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	c.mu.Lock()
	c.inbox = in
	c.mu.Unlock()
	c.startedOnce.Do(func() { close(c.started) })
	<-ctx.Done()
	c.mu.Lock()
	c.inbox = nil
	c.mu.Unlock()
	return nil
}

// Send takes a message of an answer; messages for requests that are gone
// are dropped.
func (c *Channel) Send(_ context.Context, m bus.Outbound) (channels.MessageRef, error) {
	if w := c.waiter(m.ChatID); w != nil {
		w.update(m)
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: newID()}, nil
}

// Edit takes the grown text of a streamed message.
func (c *Channel) Edit(_ context.Context, _ channels.MessageRef, m bus.Outbound) error {
	if w := c.waiter(m.ChatID); w != nil {
		w.update(m)
	}
	return nil
}

// StreamEnded takes a stream's end message (its final text, Final, Usage).
func (c *Channel) StreamEnded(_ context.Context, _ channels.MessageRef, m bus.Outbound) {
	if w := c.waiter(m.ChatID); w != nil {
		w.update(m)
	}
}

// AssemblesAnswers implements channels.Assembler: a request's answer is
// made of the turn's stream ends (see waiter).
func (c *Channel) AssemblesAnswers() {}

var _ channels.Assembler = (*Channel)(nil)

// editInterval is short: an edit here is a few bytes on an open stream.
const editInterval = 20 * time.Millisecond

// EditInterval implements channels.Editor.
func (c *Channel) EditInterval() time.Duration { return editInterval }

// MessageLimit is large: an answer is never split.
func (c *Channel) MessageLimit() int { return 1 << 30 }

// WebhookPath implements channels.WebhookHandler.
func (c *Channel) WebhookPath() string { return "/v1/" }

func (c *Channel) waiter(chatID string) *waiter {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waiters[chatID]
}

func (c *Channel) register(chatID string, release func()) *waiter {
	w := &waiter{wake: make(chan struct{}, 1), text: map[string]string{}, release: release}
	c.mu.Lock()
	c.waiters[chatID] = w
	c.mu.Unlock()
	return w
}

// unregister forgets chatID's waiter and gives back its turn slot.
func (c *Channel) unregister(chatID string) {
	c.mu.Lock()
	w := c.waiters[chatID]
	delete(c.waiters, chatID)
	c.mu.Unlock()
	if w != nil && w.release != nil {
		w.release()
	}
}

// awaitInbox returns the inbox, waiting (bounded by startWait and ctx)
// for the first Run: the HTTP server may take requests a moment before the
// channels run. Nil once Run has returned (the gateway is stopping).
func (c *Channel) awaitInbox(ctx context.Context) channels.Inbox {
	t := time.NewTimer(startWait)
	defer t.Stop()
	select {
	case <-c.started:
	case <-t.C:
	case <-ctx.Done():
	}
	return c.currentInbox()
}

func (c *Channel) currentInbox() channels.Inbox {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inbox
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
