// Package discord is the Discord channel: a bot user (made in the Discord
// developer portal) that talks to users in direct messages, guild text
// channels and threads through the gateway websocket and the REST API,
// using github.com/bwmarrin/discordgo.
//
// Receiving is over the gateway with the guild-messages, direct-messages
// and message-content intents. discordgo keeps the socket alive
// (heartbeats); reconnecting is the channels.Loop's, so that every attempt
// is backed off with jitter, reported in Health and checked for close codes
// no retry can fix (4004 authentication failed, 4014 disallowed intents).
// discordgo's Open resumes the previous session where it can. Discord has no
// per-message acknowledgement: a message is handled once it arrived on the
// socket, in order, by one worker, so a slow Inbox holds back later ones.
//
// Threads: Discord gives every thread its own channel id, and messages in
// a thread carry that id as their channel. ChatID is therefore the thread's
// id, and the default session key "discord:<thread id>" makes each thread
// its own conversation; replies go to the thread by the same id. The parent
// is not looked up (it would cost a REST call per message).
//
// Slash commands: on connect the gateway's chat commands (channels.Deps
// Commands) are registered as application commands, globally or in the
// commandGuilds, by one bulk overwrite per scope. Using one is answered at
// once with a deferred response and delivered as the text command it
// stands for; the answer completes the deferred response (slash.go).
//
// Sending passes Markdown through (Discord renders it; format.go only
// rewrites what it does not render: deep headings become bold, tables are
// put in a code block), streams by editing the sent message, and shows
// "typing…".
//
// Endpoints: discordgo reads package-level Endpoint* variables. Instead of
// reassigning them (process-global), the channel gives the session an
// http.Client whose transport rewrites https://discord.com/ to apiBase;
// the gateway URL comes from GET /gateway, so the fake's websocket is
// reached without touching any global.
//
// Concurrency: Send, SendMedia, SendVoice, Edit and Typing use only the REST
// API and may be called from any goroutine, concurrently with Run and with
// each other; the slash commands awaiting an answer they share with Run are
// under the channel's lock. discordgo's reader goroutine only queues
// message events (and gives a slash command its deferred response first,
// so the three seconds Discord allows never wait on the queue); one worker
// goroutine of Run's hands them to the Inbox in order, and Run stops it and
// closes the socket before it returns.
package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/redact"
)

// Config is channels.discord.
type Config struct {
	configs.ChannelCommon
	// Token is the bot token from the developer portal (Bot > Reset Token),
	// without the "Bot " prefix.
	Token string `json:"token"`
	// GroupConfig: "mention" (default) answers in guild channels only when
	// @mentioned or replied to; the allowlist lists channel ids. Direct
	// messages are always answered.
	channels.GroupConfig
	// AllowChannels lists the guild channel (or thread) ids the bot listens
	// in; empty means all. Direct messages are not affected.
	AllowChannels []string `json:"allowChannels"`
	// APIBase replaces https://discord.com for REST calls (tests, proxies).
	APIBase string `json:"apiBase"`
	// ReplyToMessage makes answers reply to (quote) the user's message.
	ReplyToMessage bool `json:"replyToMessage"`
	// MaxMediaBytes caps one attachment passed on to the agent (default
	// 25 MB); bigger ones become a note in the text.
	MaxMediaBytes int64 `json:"maxMediaBytes"`
	// SlashCommands registers the gateway's chat commands as Discord
	// application commands on connect, replacing the bot's earlier ones
	// (default true); false removes them.
	SlashCommands *bool `json:"slashCommands"`
	// CommandGuilds registers the commands in these guilds (server ids)
	// only, where they show at once, instead of globally (every server
	// and direct messages); empty means globally.
	CommandGuilds []string `json:"commandGuilds"`
}

func (c Config) slashCommands() bool { return c.SlashCommands == nil || *c.SlashCommands }

// DefaultAPIBase is Discord itself.
const DefaultAPIBase = "https://discord.com"

// DefaultConfig is disabled, with the defaults of every option.
func DefaultConfig() Config {
	yes := true
	return Config{GroupConfig: channels.GroupConfig{GroupPolicy: channels.GroupMention}, APIBase: DefaultAPIBase, MaxMediaBytes: 25 << 20, SlashCommands: &yes}
}

// Validate checks the config; errors name the key under channels.discord.
func (c Config) Validate() error {
	var p channels.Problems
	p.Required(c.Token, "token: required (developer portal > your app > Bot > Reset Token)")
	if strings.HasPrefix(c.Token, "Bot ") {
		p.Addf(`token: leave out the "Bot " prefix`)
	}
	p.Add(c.GroupConfig.Check())
	p.URL("apiBase", c.APIBase)
	p.NonNegative("maxMediaBytes", c.MaxMediaBytes)
	for i, g := range c.CommandGuilds {
		if !snowflake.MatchString(g) {
			p.Addf("commandGuilds[%d]: %q is not a server id (Developer Mode, right-click the server, Copy Server ID)", i, g)
		}
	}
	return p.Err()
}

var snowflake = regexp.MustCompile(`^[0-9]{1,20}$`)

// Factory registers the channel: registry.Register("discord", discord.Factory()).
func Factory() channels.Factory {
	return channels.NewFactory("discord", DefaultConfig, New)
}

// Channel is the Discord adapter.
type Channel struct {
	cfg       Config
	log       *slog.Logger
	redact    *redact.Redactor
	transport *http.Transport
	s         *discordgo.Session
	allow     map[string]bool
	files     *http.Client // attachment downloads (the CDN needs no token)
	mediaDir  string       // where attachments are saved ("" = not downloaded)
	commands  []bus.Command

	// Timing, fixed by New; tests in this package shorten them.
	editInterval time.Duration
	backoffMin   time.Duration
	backoffMax   time.Duration

	// events carries gateway events from discordgo's reader to the worker
	// of Run, in order.
	events chan *discordgo.Event

	mu     sync.Mutex
	health channels.HealthState
	me     *discordgo.User
	app    string          // the application id, from READY
	stop   <-chan struct{} // ctx.Done() of the current Run
	lost   chan struct{}   // closed when the current session's socket drops
	// registered is set once the commands are in place for this process.
	registered bool
	// interactions are the slash commands whose answer may still complete
	// them, by interaction id (slash.go).
	interactions map[string]*interaction
}

var (
	_ channels.Channel        = (*Channel)(nil)
	_ channels.Editor         = (*Channel)(nil)
	_ channels.Limiter        = (*Channel)(nil)
	_ channels.Typer          = (*Channel)(nil)
	_ channels.MediaSender    = (*Channel)(nil)
	_ channels.HealthReporter = (*Channel)(nil)
)

// New builds the channel. It does no IO: Run connects.
func New(cfg Config, deps channels.Deps) (*Channel, error) {
	channels.FillDefaults(&cfg, DefaultConfig())
	cfg.APIBase = strings.TrimRight(cfg.APIBase, "/")
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s, err := discordgo.New("Bot " + cfg.Token)
	if err != nil {
		return nil, fmt.Errorf("discord: %w", err)
	}
	c := &Channel{
		cfg:          cfg,
		log:          deps.Logger(),
		redact:       deps.Redactor(cfg.Token),
		mediaDir:     deps.MediaDir("discord"),
		transport:    http.DefaultTransport.(*http.Transport).Clone(),
		s:            s,
		allow:        map[string]bool{},
		commands:     deps.Commands,
		interactions: map[string]*interaction{},
		editInterval: time.Second,
		backoffMin:   500 * time.Millisecond,
		backoffMax:   30 * time.Second,
		events:       make(chan *discordgo.Event, 256),
	}
	c.files = &http.Client{Transport: c.transport, Timeout: 2 * time.Minute}
	for _, id := range cfg.AllowChannels {
		c.allow[strings.TrimSpace(id)] = true
	}
	var rt http.RoundTripper = c.transport
	if cfg.APIBase != DefaultAPIBase {
		base, _ := url.Parse(cfg.APIBase) // checked by Validate
		rt = &rebase{base: base, next: c.transport}
	}
	s.Client = &http.Client{Transport: rt, Timeout: 30 * time.Second}
	s.Identify.Intents = discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages | discordgo.IntentsMessageContent
	s.ShouldRetryOnRateLimit = false // 429 goes to the dispatcher as RetryAfterError
	s.MaxRestRetries = 1
	s.StateEnabled = false
	s.SyncEvents = true              // in order; handlers only queue
	s.LogLevel = -1                  // discordgo logs with the log package; we log its events ourselves
	s.ShouldReconnectOnError = false // the Loop reconnects
	s.AddHandler(c.onReady)
	s.AddHandler(func(_ *discordgo.Session, _ *discordgo.Resumed) { c.log.Info("discord: session resumed") })
	s.AddHandler(func(_ *discordgo.Session, _ *discordgo.Disconnect) { c.disconnected() })
	s.AddHandler(c.onEvent)
	return c, nil
}

// rebase sends requests for https://discord.com/... to another base URL.
type rebase struct {
	base *url.URL
	next http.RoundTripper
}

func (r *rebase) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != "discord.com" {
		return r.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = r.base.Scheme, r.base.Host
	req.URL.Path = strings.TrimRight(r.base.Path, "/") + req.URL.Path
	req.Host = r.base.Host
	return r.next.RoundTrip(req)
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "discord" }

// MessageLimit implements channels.Limiter: Discord's 2000 characters.
func (c *Channel) MessageLimit() int { return 2000 }

// EditInterval implements channels.Editor: Discord allows about five edits
// per five seconds per channel.
func (c *Channel) EditInterval() time.Duration { return c.editInterval }

// Health implements channels.HealthReporter.
func (c *Channel) Health() channels.Health { return c.health.Get() }

func (c *Channel) self() *discordgo.User {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.me
}

func (c *Channel) onReady(_ *discordgo.Session, r *discordgo.Ready) {
	if r.User != nil {
		c.mu.Lock()
		c.me = r.User
		if r.Application != nil && r.Application.ID != "" {
			c.app = r.Application.ID
		}
		c.mu.Unlock()
		c.log.Info("discord: connected", "bot", r.User.Username, "guilds", len(r.Guilds))
	}
}

// appID is the application's id: READY's, or (before one) the bot user's,
// which it equals for every application made since 2020.
func (c *Channel) appID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.app == "" && c.me != nil {
		return c.me.ID
	}
	return c.app
}

// disconnected ends the current session (discordgo closed the socket).
func (c *Channel) disconnected() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lost != nil {
		close(c.lost)
		c.lost = nil
	}
}

// onEvent queues every dispatch for Run's worker. It blocks while the
// queue is full (back-pressure on the gateway reader). A slash command is
// answered (deferred) here first, within Discord's three seconds.
func (c *Channel) onEvent(_ *discordgo.Session, e *discordgo.Event) {
	if e.Type != "MESSAGE_CREATE" && e.Type != "INTERACTION_CREATE" {
		return
	}
	c.mu.Lock()
	stop := c.stop
	c.mu.Unlock()
	if stop == nil {
		c.log.Warn("discord: message received while not running; dropped")
		return
	}
	if e.Type == "INTERACTION_CREATE" && !c.onCommand(e) {
		return
	}
	select {
	case c.events <- e:
	case <-stop:
	}
}

// ErrUnauthorized is returned by Run (as a channels.FatalError) when
// Discord rejects the token.
var ErrUnauthorized = errors.New("discord: the bot token was rejected; check channels.discord.token")

// ErrIntents is returned by Run (as a channels.FatalError) when Discord
// refuses the intents the channel asks for.
var ErrIntents = errors.New("discord: the gateway refused the intents (close 4014); enable the Message Content intent for the bot in the Discord developer portal")

// Run opens the gateway, handles messages until ctx ends, and returns nil
// then. Connecting and reconnecting are a channels.Loop's; a rejected token
// or refused intents end it with a channels.FatalError.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	// The worker stops when ctx ends or the Loop gives up.
	wctx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	c.mu.Lock()
	c.stop = wctx.Done()
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.stop = nil
		c.mu.Unlock()
		c.transport.CloseIdleConnections()
	}()
	stop := channels.Work(wctx, c.events, func(ctx context.Context, e *discordgo.Event) { c.handle(ctx, in, e) })
	loop := &channels.Loop{
		Name: "discord", Log: c.log, Health: &c.health, Min: c.backoffMin, Max: c.backoffMax,
		Redact: c.redact.Error,
	}
	err := loop.Run(ctx, c.session)
	stopWorker() // first: a reader waiting to queue an event gives up
	stop()
	if cerr := c.s.Close(); cerr != nil {
		c.log.Debug("discord: close", "err", cerr)
	}
	return err
}

// session opens the gateway (Open returns once Discord sent READY or
// RESUMED) and waits until the socket drops or ctx ends.
func (c *Channel) session(ctx context.Context, up func()) error {
	lost := make(chan struct{})
	c.mu.Lock()
	c.lost = lost
	c.mu.Unlock()
	if err := c.s.Open(); err != nil {
		var rest *discordgo.RESTError
		var closed *websocket.CloseError
		switch {
		case errors.As(err, &rest) && rest.Response != nil && rest.Response.StatusCode == http.StatusUnauthorized,
			errors.As(err, &closed) && closed.Code == 4004:
			return channels.Fatal(fmt.Errorf("%w (%s)", ErrUnauthorized, c.redact.Error(err)))
		case errors.As(err, &closed) && closed.Code == 4014:
			return channels.Fatal(ErrIntents)
		}
		return fmt.Errorf("open gateway: %w", err)
	}
	up()
	c.mu.Lock()
	register := !c.registered
	c.mu.Unlock()
	if register {
		if err := c.registerCommands(ctx, c.appID()); err != nil {
			if ctx.Err() == nil {
				c.log.Warn("discord: registering the slash commands failed; trying again at the next connect", "err", err)
			}
		} else {
			c.mu.Lock()
			c.registered = true
			c.mu.Unlock()
		}
	}
	select {
	case <-ctx.Done():
		return nil
	case <-lost:
		return errors.New("gateway disconnected")
	}
}

// deliver hands m to the inbox, retrying a few times on failures other
// than a denial. Gateway events are not acknowledged and a resume replays
// only what the socket missed (discordgo keeps the sequence), so a message
// the gateway did not take is lost, and reported so.
func (c *Channel) deliver(ctx context.Context, in channels.Inbox, m bus.Inbound) {
	if err := channels.DeliverRetrying(ctx, in, m, c.log, c.backoffMin, c.backoffMax); err != nil && !errors.Is(err, channels.ErrDenied) {
		channels.ReportLost(in, m, err, c.log)
	}
}
