// Package slack is the Slack channel: a Slack app that talks to users in
// direct messages and channels, connected by Socket Mode (no public URL
// needed), using github.com/slack-go/slack and its socketmode package.
//
// Receiving: apps.connections.open gives a WebSocket URL; Slack sends
// "hello", then events_api envelopes. An envelope is acknowledged only
// after the gateway's Inbox took its message, so Slack redelivers what a
// crash lost. Disconnect requests and dropped sockets reconnect; a failing
// connect is retried with backoff; Health says connected or reconnecting.
//
// In channels the bot answers when mentioned (groupPolicy "mention"), to
// every message ("open"), or in listed channels only ("allowlist"). With
// replyInThread each thread is its own conversation and answers go into it.
//
// Sending converts Markdown to mrkdwn (format.go), streams by chat.update,
// and reacts 👀 on receipt and ✅ when the final answer is sent.
//
// Slash commands ("/nanobot new", slash.go) arrive as slash_commands
// envelopes, are acknowledged at once and delivered as the text command
// they stand for; the Home tab (home.go) is published when a user opens
// it.
//
// Concurrency: Send, Edit, SendMedia, SendVoice and React use only the Web
// API and may be called from any goroutine, concurrently with Run and with
// each other; the state they share with Run (the bot's id, the messages
// given ✅, the slash commands' response_urls) is under a lock. Run handles the Socket Mode events on its own
// goroutine, one at a time and in order; the socketmode client runs its
// connection on goroutines of its own, and each session waits for them
// before Run reconnects or returns.
package slack

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

	"github.com/slack-go/slack"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/kit"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/redact"
)

// Config is channels.slack.
type Config struct {
	configs.ChannelCommon
	// AppToken is the app-level token with connections:write ("xapp-...").
	AppToken string `json:"appToken"`
	// BotToken is the bot user OAuth token ("xoxb-...").
	BotToken string `json:"botToken"`
	// GroupPolicy is "mention" (default: in channels, answer only when
	// @mentioned), "open" (every message) or "allowlist" (every message in
	// AllowChannels, nothing elsewhere).
	GroupPolicy channels.GroupPolicy `json:"groupPolicy"`
	// AllowChannels are the channel ids ("C0123...") of the allowlist policy.
	AllowChannels []string `json:"allowChannels"`
	// ReplyInThread answers in a thread under the user's message and makes
	// each thread its own session (default true).
	ReplyInThread *bool `json:"replyInThread"`
	// Reactions adds 👀 to a received message and ✅ once the final answer
	// is sent (default true).
	Reactions *bool `json:"reactions"`
	// APIBase is the Web API base (default https://slack.com/api/); tests
	// point it at a local fake.
	APIBase string `json:"apiBase"`
	// MaxMediaBytes caps one file a user shares that is downloaded for the
	// agent (default 20 MB); larger files become a note in the text.
	MaxMediaBytes int64 `json:"maxMediaBytes"`
	// SlashCommand is the slash command of the app's manifest that takes
	// the chat commands as its text ("/nanobot new", "/nanobot model
	// gpt"); default "/nanobot". Other slash commands the manifest
	// registers ("/new") are taken as the chat command of their name.
	SlashCommand string `json:"slashCommand"`
	// AppHome publishes the Home tab (how to talk to the bot, the
	// commands) when a user opens it (default true).
	AppHome *bool `json:"appHome"`
	// WorkbenchURL, when set, is linked from the Home tab (the gateway's
	// web workbench as your users reach it).
	WorkbenchURL string `json:"workbenchURL"`
}

// DefaultAPIBase is Slack's Web API.
const DefaultAPIBase = "https://slack.com/api/"

// DefaultConfig is disabled, with the defaults of every option.
func DefaultConfig() Config {
	yes := true
	return Config{GroupPolicy: channels.GroupMention, APIBase: DefaultAPIBase, ReplyInThread: &yes, Reactions: &yes, MaxMediaBytes: 20 << 20,
		SlashCommand: DefaultSlashCommand, AppHome: &yes}
}

// DefaultSlashCommand is Config.SlashCommand's default.
const DefaultSlashCommand = "/nanobot"

func (c Config) threads() bool   { return c.ReplyInThread == nil || *c.ReplyInThread }
func (c Config) reactions() bool { return c.Reactions == nil || *c.Reactions }
func (c Config) appHome() bool   { return c.AppHome == nil || *c.AppHome }

// slashName is what Slack takes as a slash command: a slash and up to 32
// lower-case letters, digits, "-" or "_".
var slashName = regexp.MustCompile(`^/[-_a-z0-9]{1,32}$`)

// Validate checks the config; errors name the key under channels.slack.
func (c Config) Validate() error {
	var p channels.Problems
	if !strings.HasPrefix(c.AppToken, "xapp-") {
		p.Addf(`appToken: required, an app-level token ("xapp-...") with connections:write`)
	}
	if !strings.HasPrefix(c.BotToken, "xoxb-") {
		p.Addf(`botToken: required, a bot token ("xoxb-...")`)
	}
	p.Add(c.GroupPolicy.Check("allowChannels", c.AllowChannels))
	p.URL("apiBase", c.APIBase)
	p.NonNegative("maxMediaBytes", c.MaxMediaBytes)
	if !slashName.MatchString(c.SlashCommand) {
		p.Addf(`slashCommand: %q is not a slash command like "/nanobot" (lower case, at most 32 characters)`, c.SlashCommand)
	}
	if c.WorkbenchURL != "" {
		p.URL("workbenchURL", c.WorkbenchURL)
	}
	return p.Err()
}

// Factory registers the channel: registry.Register("slack", slack.Factory()).
func Factory() channels.Factory {
	return channels.NewFactory("slack", DefaultConfig, New)
}

// Channel is the Slack adapter.
type Channel struct {
	cfg    Config
	log    *slog.Logger
	redact *redact.Redactor
	http   *http.Client
	api    *slack.Client
	// mediaDir is where shared files are saved ("" = not downloaded), and
	// fileHost the host besides *.slack.com the bot token may be sent to
	// for a download (the apiBase's, so a test fake works).
	mediaDir, fileHost string

	// Timing, fixed by New; tests in this package shorten them.
	editInterval time.Duration
	backoffMin   time.Duration
	backoffMax   time.Duration
	pingInterval time.Duration

	// seen are recent message keys: Slack sends a mention in a channel
	// twice (message and app_mention) and redelivers unacked events.
	seen *kit.Dedup

	// commands are the gateway's chat commands (the Home tab lists them,
	// "/nanobot <name>" is known to be one).
	commands []bus.Command

	mu     sync.Mutex
	health channels.HealthState
	botID  string          // the bot's user id ("U..."), from auth.test
	done   map[string]bool // user messages already given ✅
	// responses are the response_urls of recent slash commands, by
	// trigger id: where an answer goes when the bot cannot post in the
	// conversation (slash.go).
	responses map[string]*response
}

var (
	_ channels.Channel        = (*Channel)(nil)
	_ channels.Editor         = (*Channel)(nil)
	_ channels.Limiter        = (*Channel)(nil)
	_ channels.MediaSender    = (*Channel)(nil)
	_ channels.HealthReporter = (*Channel)(nil)
)

// New builds the channel. It does no IO: Run connects.
func New(cfg Config, deps channels.Deps) (*Channel, error) {
	channels.FillDefaults(&cfg, DefaultConfig())
	if !strings.HasSuffix(cfg.APIBase, "/") {
		cfg.APIBase += "/"
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Channel{
		cfg:          cfg,
		log:          deps.Logger(),
		redact:       deps.Redactor(cfg.BotToken, cfg.AppToken),
		mediaDir:     deps.MediaDir("slack"),
		http:         &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: time.Minute},
		editInterval: time.Second,
		backoffMin:   500 * time.Millisecond,
		backoffMax:   30 * time.Second,
		pingInterval: 30 * time.Second,
		seen:         kit.NewDedup(512),
		done:         map[string]bool{},
		commands:     deps.Commands,
		responses:    map[string]*response{},
	}
	if u, err := url.Parse(cfg.APIBase); err == nil {
		c.fileHost = u.Host
	}
	c.api = slack.New(cfg.BotToken,
		slack.OptionAppLevelToken(cfg.AppToken),
		slack.OptionAPIURL(cfg.APIBase),
		slack.OptionHTTPClient(c.http),
	)
	return c, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "slack" }

// MessageLimit implements channels.Limiter. Slack truncates text over
// 40 000 characters but renders long messages badly well before; 4000 is
// its recommended size.
func (c *Channel) MessageLimit() int { return 4000 }

// EditInterval implements channels.Editor: chat.update is a Tier 3 method
// (about 50 per minute), so one edit per second per message.
func (c *Channel) EditInterval() time.Duration { return c.editInterval }

// Health implements channels.HealthReporter.
func (c *Channel) Health() channels.Health { return c.health.Get() }

func (c *Channel) self() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.botID
}

// ErrUnauthorized is returned by Run (as a channels.FatalError) when Slack
// rejects a token or the workspace deactivated the app.
var ErrUnauthorized = errors.New("slack: a token was rejected; check channels.slack.appToken and botToken")

// authErrors are Slack error codes no retry can fix.
var authErrors = []string{"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired", "not_allowed_token_type"}

// Run connects, receives until ctx ends, and returns nil then. Transient
// failures are retried with backoff by a channels.Loop; a rejected token
// ends it with a channels.FatalError.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	defer c.http.CloseIdleConnections()
	loop := &channels.Loop{
		Name: "slack", Log: c.log, Health: &c.health, Min: c.backoffMin, Max: c.backoffMax,
		Redact: c.redact.Error,
	}
	return loop.Run(ctx, func(ctx context.Context, up func()) error {
		err := c.session(ctx, in, link{up: up, lost: loop.Lost})
		if code := authError(err); code != "" {
			return channels.Fatal(fmt.Errorf("%w (%s)", ErrUnauthorized, code))
		}
		return err
	})
}

// authError returns the Slack error code of err when it is one of
// authErrors, or "".
func authError(err error) string {
	if err == nil {
		return ""
	}
	code := err.Error()
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		code = se.Err
	}
	for _, a := range authErrors {
		if code == a || strings.HasSuffix(code, ": "+a) {
			return a
		}
	}
	return ""
}
