// Package telegram is the Telegram channel: a bot (made with @BotFather)
// that talks to users in private chats, groups and forum topics through the
// Bot API, using github.com/go-telegram/bot.
//
// Receiving is by long polling (the default) or, when webhookUrl is set, by
// a webhook whose http.Handler the gateway mounts. Either way a message is
// acknowledged to Telegram only after the gateway's Inbox took it: the next
// getUpdates (whose offset confirms the previous batch) waits until every
// update of the batch was handled, and the webhook answers after delivery.
// An update the gateway did not take is never acknowledged: polling ends
// the session and starts the next one at that update, the webhook answers
// 503, and Health reports reconnecting until the gateway takes messages.
// A failing poll is retried with backoff and jitter; Health says whether the
// channel is connected or reconnecting, with the last error.
//
// Sending converts Markdown to Telegram's HTML (format.go), streams as a
// message draft in private chats (drafts.go) and by editing the sent
// message elsewhere, shows "typing…", sends answers with a table as rich
// messages when richMessages is on (rich.go), and sends files as photos or
// documents. Photos, documents, voice notes and audio users send are
// downloaded into the media folder; the agent transcribes voice notes when
// transcription is configured (Config.Transcription is handed to it). The
// command menu is registered per audience (menu.go).
//
// Concurrency: Send, Edit, Draft, Typing, SendMedia and SendVoice use a
// client that never polls and may be called from any goroutine, concurrently
// with Run and with each other. In polling mode one library goroutine
// fetches updates and one worker handles them in order, and each poll
// session waits for both before Run reconnects or returns; in webhook mode
// the handler is called on the HTTP server's goroutines, concurrently, and
// answers 503 while Run is not running. The state Run shares with them (the
// bot's identity, the Inbox, the poll offset) is under a lock.
package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/redact"
)

// Config is channels.telegram.
type Config struct {
	configs.ChannelCommon
	// Token is the bot token from @BotFather ("123456:ABC-...").
	Token string `json:"token"`
	// Proxy is an http://, https:// or socks5:// proxy for the Bot API
	// (empty: the environment's HTTPS_PROXY, if any).
	Proxy string `json:"proxy"`
	// ReplyToMessage makes answers quote the user's message.
	ReplyToMessage bool `json:"replyToMessage"`
	// GroupConfig: "mention" (default) answers in groups only when
	// @mentioned, replied to, or sent a command; the allowlist lists chat
	// ids ("-1001234567890").
	channels.GroupConfig
	// APIBase is the Bot API server (default https://api.telegram.org; a
	// self-hosted telegram-bot-api server also works).
	APIBase string `json:"apiBase"`
	// WebhookURL switches from long polling to a webhook: the public HTTPS
	// URL Telegram posts updates to; the gateway serves WebhookHandler at
	// its path.
	WebhookURL string `json:"webhookUrl"`
	// WebhookSecret is the secret Telegram sends in the
	// X-Telegram-Bot-Api-Secret-Token header (1-256 of A-Z a-z 0-9 _ -);
	// required with WebhookURL.
	WebhookSecret string `json:"webhookSecret"`
	// WebhookMaxConnections caps the connections Telegram opens to the
	// webhook at once (1-100; 0: Telegram's default of 40).
	WebhookMaxConnections int `json:"webhookMaxConnections"`
	// MaxMediaBytes caps one downloaded attachment (default 20 MB, the Bot
	// API's own download limit); bigger ones become a note in the text.
	MaxMediaBytes int64 `json:"maxMediaBytes"`
	// Transcription is a speech-to-text endpoint for this channel's voice
	// notes alone; the agent uses it (the gateway hands it over), in place
	// of the top-level transcription section.
	Transcription Transcription `json:"transcription"`
	// Streaming shows an answer while the model writes it (default true);
	// off, the answer is sent once it is complete.
	Streaming bool `json:"streaming"`
	// StreamMode is how a private chat sees an answer being written:
	// "draft" (default) as a message draft Telegram animates
	// (sendMessageDraft), the message sent once complete; "edit" as a
	// message edited as it grows. Groups always see edits, and so do
	// private chats once Telegram refused drafts.
	StreamMode string `json:"streamMode"`
	// RichMessages sends a complete answer that holds a Markdown table as a
	// rich message (sendRichMessage, Bot API 10.1), which Telegram shows as
	// a real table; off (the default), a table is a monospace block.
	RichMessages bool `json:"richMessages"`
}

// Stream modes of a private chat (Config.StreamMode).
const (
	StreamDraft = "draft"
	StreamEdit  = "edit"
)

// Transcription is a Whisper-compatible speech-to-text endpoint (OpenAI,
// Groq, a local whisper server): POST {apiBase}/audio/transcriptions.
// The top-level transcription section does the same for every channel
// and knows more services.
type Transcription struct {
	// APIBase is the endpoint's base URL, e.g. https://api.groq.com/openai/v1;
	// empty disables transcription.
	APIBase string `json:"apiBase"`
	// APIKey is sent as a bearer token (may be empty for local servers).
	APIKey string `json:"apiKey"`
	// Model is the model name (default whisper-1).
	Model string `json:"model"`
	// Language is the spoken language as an ISO 639 code, sent as a hint
	// ("language"); empty lets the service detect it.
	Language string `json:"language,omitempty"`
}

// DefaultAPIBase is the public Bot API.
const DefaultAPIBase = "https://api.telegram.org"

// DefaultConfig is disabled, with the defaults of every option.
func DefaultConfig() Config {
	return Config{
		GroupConfig: channels.GroupConfig{GroupPolicy: channels.GroupMention}, APIBase: DefaultAPIBase, MaxMediaBytes: 20 << 20,
		Streaming: true, StreamMode: StreamDraft,
	}
}

// Validate checks the config; errors name the key under channels.telegram.
func (c Config) Validate() error {
	var p channels.Problems
	p.Required(c.Token, "token: required (get one from @BotFather)")
	if strings.TrimSpace(c.Token) != "" && !strings.Contains(c.Token, ":") {
		p.Addf(`token: not a bot token (want "123456:ABC...")`)
	}
	p.Add(c.GroupConfig.Check())
	p.URL("apiBase", c.APIBase)
	if c.Proxy != "" {
		if u, err := url.Parse(c.Proxy); err != nil || u.Host == "" {
			p.Addf("proxy: %q is not a URL", c.Proxy)
		}
	}
	if c.WebhookMaxConnections < 0 || c.WebhookMaxConnections > 100 {
		p.Addf("webhookMaxConnections: want 1 to 100 (0: Telegram's default), got %d", c.WebhookMaxConnections)
	}
	if c.WebhookURL != "" {
		p.URL("webhookUrl", c.WebhookURL)
		if !validSecret(c.WebhookSecret) {
			p.Addf("webhookSecret: required with webhookUrl, 1-256 characters of A-Z a-z 0-9 _ -")
		}
	}
	p.NonNegative("maxMediaBytes", c.MaxMediaBytes)
	if c.StreamMode != StreamDraft && c.StreamMode != StreamEdit {
		p.Addf("streamMode: want %q or %q, got %q", StreamDraft, StreamEdit, c.StreamMode)
	}
	if c.Transcription.APIBase != "" {
		if u, err := url.Parse(c.Transcription.APIBase); err != nil || u.Host == "" {
			p.Addf("transcription.apiBase: %q is not a URL", c.Transcription.APIBase)
		}
	}
	return p.Err()
}

func validSecret(s string) bool {
	if len(s) == 0 || len(s) > 256 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// Factory registers the channel: registry.Register("telegram", telegram.Factory()).
func Factory() channels.Factory {
	return channels.NewFactory("telegram", DefaultConfig, New)
}

// Channel is the Telegram adapter.
type Channel struct {
	cfg      Config
	log      *slog.Logger
	redact   *redact.Redactor
	mediaDir string
	// commands are the gateway's chat commands, for the menus (menu.go).
	commands []bus.Command
	http     *http.Client // Bot API calls (through the proxy)
	files    *http.Client // file downloads
	api      *bot.Bot     // sends and edits; never polls

	// Timing, fixed by New; tests in this package shorten them.
	pollTimeout  time.Duration
	editInterval time.Duration
	draftRefresh time.Duration
	backoffMin   time.Duration
	backoffMax   time.Duration

	health channels.HealthState
	// refusing is set while the gateway refuses messages (noteDelivery).
	refusing atomic.Bool
	// noDrafts and noRich are set once Telegram answered that this bot
	// cannot use message drafts or rich messages: for the rest of the
	// process streams are edited and tables sent as HTML.
	noDrafts, noRich atomic.Bool

	mu    sync.Mutex
	me    *models.User
	inbox channels.Inbox
	// offset is the id of the first polled update not yet handled (0:
	// none known): a new poll session starts there, so that an update the
	// gateway did not take is fetched again and the ones before it are
	// confirmed, not delivered twice.
	offset int64
	// conflictSince and conflictLast bound the current run of 409
	// Conflict answers (see conflict).
	conflictSince, conflictLast time.Time
}

var (
	_ channels.Channel            = (*Channel)(nil)
	_ channels.Editor             = (*Channel)(nil)
	_ channels.Drafter            = (*Channel)(nil)
	_ channels.CapabilityReporter = (*Channel)(nil)
	_ channels.Limiter            = (*Channel)(nil)
	_ channels.Typer              = (*Channel)(nil)
	_ channels.MediaSender        = (*Channel)(nil)
	_ channels.VoiceSender        = (*Channel)(nil)
	_ channels.HealthReporter     = (*Channel)(nil)
)

// New builds the channel. It does no IO: Run connects.
func New(cfg Config, deps channels.Deps) (*Channel, error) {
	channels.FillDefaults(&cfg, DefaultConfig())
	cfg.APIBase = strings.TrimRight(cfg.APIBase, "/")
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.Proxy != "" {
		u, _ := url.Parse(cfg.Proxy) // checked by Validate
		transport.Proxy = http.ProxyURL(u)
	}
	c := &Channel{
		cfg:          cfg,
		log:          deps.Logger(),
		redact:       deps.Redactor(cfg.Token),
		mediaDir:     deps.MediaDir("telegram"),
		commands:     deps.Commands,
		pollTimeout:  time.Minute,
		editInterval: time.Second,
		draftRefresh: 20 * time.Second,
		backoffMin:   500 * time.Millisecond,
		backoffMax:   30 * time.Second,
		files:        &http.Client{Transport: transport, Timeout: 5 * time.Minute},
	}
	c.http = &http.Client{Transport: transport}
	api, err := c.newBot(&sender{c: c})
	if err != nil {
		return nil, err
	}
	c.api = api
	return c, nil
}

// newBot builds a library client over hc; only the poller's is started.
func (c *Channel) newBot(hc bot.HttpClient, opts ...bot.Option) (*bot.Bot, error) {
	base := []bot.Option{
		bot.WithSkipGetMe(),
		bot.WithServerURL(c.cfg.APIBase),
		bot.WithHTTPClient(c.pollTimeout, hc),
		bot.WithErrorsHandler(c.libraryError),
		bot.WithDefaultHandler(func(context.Context, *bot.Bot, *models.Update) {}),
	}
	b, err := bot.New(c.cfg.Token, append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	return b, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "telegram" }

// MessageLimit implements channels.Limiter: Telegram's 4096 characters.
func (c *Channel) MessageLimit() int { return 4096 }

// EditInterval implements channels.Editor. Telegram allows about one edit
// per second per chat before it answers 429.
func (c *Channel) EditInterval() time.Duration { return c.editInterval }

// Capabilities implements channels.CapabilityReporter: with streaming off
// no message is edited (and none drafted); answers are sent complete.
func (c *Channel) Capabilities() channels.Capabilities {
	return channels.Capabilities{Edit: c.cfg.Streaming}
}

// Health implements channels.HealthReporter.
func (c *Channel) Health() channels.Health { return c.health.Get() }

func (c *Channel) self() *models.User {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.me
}

// ErrUnauthorized is returned by Run (as a channels.FatalError) when
// Telegram rejects the token.
var ErrUnauthorized = errors.New("telegram: the bot token was rejected (401 Unauthorized); check channels.telegram.token")

// ErrConflict is returned by Run (as a channels.FatalError) when another
// process keeps polling the same bot (409 Conflict for longer than
// conflictGrace).
var ErrConflict = errors.New("telegram: another process keeps polling this bot (409 Conflict: terminated by other getUpdates request); stop the other gateway, then reload or restart this one")

// Run connects, receives until ctx ends, and returns nil then. Transient
// failures are retried with backoff by a channels.Loop; a rejected token and
// a lasting conflict with another poller end it with a channels.FatalError.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	c.mu.Lock()
	c.inbox = in
	c.conflictSince, c.conflictLast = time.Time{}, time.Time{}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.inbox = nil
		c.mu.Unlock()
		c.http.CloseIdleConnections()
		c.files.CloseIdleConnections()
	}()
	loop := &channels.Loop{
		Name: "telegram", Log: c.log, Health: &c.health, Min: c.backoffMin, Max: c.backoffMax,
		Redact: c.redact.Error,
	}
	registered := false
	return loop.Run(ctx, func(ctx context.Context, up func()) error {
		if err := c.connect(ctx, !registered); err != nil {
			return err
		}
		registered = true
		up()
		if c.cfg.WebhookURL != "" {
			<-ctx.Done() // WebhookHandler receives
			return nil
		}
		return c.poll(ctx)
	})
}

// connect learns who the bot is, registers the command menus (the first
// time) and sets up the webhook (or removes one, for polling): Telegram
// has confirmed the token once it returns nil. The calls are independent
// and run at once, so a start waits for the slowest of them, not their
// sum; connect returns only when all have.
func (c *Channel) connect(ctx context.Context, register bool) error {
	var wg sync.WaitGroup
	var me *models.User
	var meErr, hookErr, menuErr error
	wg.Go(func() { me, meErr = c.api.GetMe(ctx) })
	if register {
		wg.Go(func() { menuErr = c.registerMenus(ctx) })
	}
	wg.Go(func() {
		if c.cfg.WebhookURL != "" {
			_, hookErr = c.api.SetWebhook(ctx, &bot.SetWebhookParams{URL: c.cfg.WebhookURL, SecretToken: c.cfg.WebhookSecret, MaxConnections: c.cfg.WebhookMaxConnections, AllowedUpdates: allowedUpdates})
		} else {
			// getUpdates fails while a webhook is set.
			_, hookErr = c.api.DeleteWebhook(ctx, &bot.DeleteWebhookParams{})
		}
	})
	wg.Wait()
	if meErr != nil {
		if errors.Is(meErr, bot.ErrorUnauthorized) {
			return channels.Fatal(ErrUnauthorized)
		}
		return fmt.Errorf("getMe: %w", meErr)
	}
	if hookErr != nil {
		return fmt.Errorf("webhook setup: %w", hookErr)
	}
	if menuErr != nil {
		// Said once Telegram answered: while it cannot be reached, the
		// failed connection says all there is.
		c.log.Warn("telegram: registering the command menu failed (the commands still work typed)", "err", c.redact.Error(menuErr))
	}
	c.mu.Lock()
	c.me = me
	c.mu.Unlock()
	c.log.Info("telegram: connected", "bot", me.Username, "mode", map[bool]string{true: "webhook", false: "polling"}[c.cfg.WebhookURL != ""])
	return nil
}

var allowedUpdates = []string{"message", "channel_post", "callback_query"}

// poll long-polls through the library until ctx ends, a poll fails or the
// gateway does not take an update; it returns why (the Loop reconnects
// with backoff, and the next session fetches that update again).
func (c *Channel) poll(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p := &poller{c: c, stop: cancel, idle: make(chan struct{})}
	close(p.idle)
	opts := []bot.Option{
		bot.WithDefaultHandler(p.handle),
		bot.WithNotAsyncHandlers(), // in order, and done before the next poll acks
		bot.WithWorkers(1),
		bot.WithAllowedUpdates(allowedUpdates),
	}
	// A fresh library client per session starts at the first update not
	// handled yet: one a previous session fetched but could not deliver is
	// fetched again, and the first poll confirms only what went before it.
	c.mu.Lock()
	offset := c.offset
	c.mu.Unlock()
	if offset > 0 {
		opts = append(opts, bot.WithInitialOffset(offset-1)) // the library asks for its value + 1
	}
	b, err := c.newBot(p, opts...)
	if err != nil {
		return err
	}
	b.Start(ctx)
	if cause := context.Cause(ctx); !errors.Is(cause, context.Canceled) {
		return cause
	}
	return nil
}

// conflictGrace is how long 409 Conflict answers may keep coming before the
// channel gives up. A gateway restarted quickly can see a few for up to one
// poll timeout (its previous process's getUpdates is still held by
// Telegram); a second gateway polling the same bot makes them go on for
// good, each process knocking the other's poll off, so both would
// tug-of-war over updates forever.
func (c *Channel) conflictGrace() time.Duration { return 2 * c.pollTimeout }

// conflict records a 409 answer and reports whether conflicts have now gone
// on for longer than conflictGrace without a quiet gap that long.
func (c *Channel) conflict(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	grace := c.conflictGrace()
	if c.conflictLast.IsZero() || now.Sub(c.conflictLast) > grace {
		c.conflictSince = now
	}
	c.conflictLast = now
	return now.Sub(c.conflictSince) >= grace
}

// libraryError receives the library's own error reports (a failed poll,
// a response it could not read).
func (c *Channel) libraryError(err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	c.log.Warn("telegram: bot api error", "err", c.redact.Error(err))
}
