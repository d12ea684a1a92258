// Package qq is the QQ official bot channel (QQ 开放平台 机器人): a bot made on
// q.qq.com that talks to users in single chats (C2C), in QQ groups where it
// is @-mentioned, and in QQ-guild direct messages. There is no Go SDK on our
// module proxy, so the package speaks the protocol itself: the gateway
// websocket (Hello, Identify, READY, heartbeats, Reconnect, Resume, Invalid
// Session) for events and REST v2 for replies, with an app access token from
// bots.qq.com (kit.TokenCache refreshes it before it expires).
//
// Receiving: one websocket at a time, run by channels.Loop (backoff with jitter,
// health). Dispatches go, in order, to one worker; the sequence number the
// heartbeat and Resume report is advanced only after Deliver returned for
// the event, so a message lost in a dropped connection is replayed by the
// platform on Resume (kit.Dedup keeps a replayed message from reaching the
// agent twice).
//
// Sending: QQ only lets a bot answer a message it received ("passive"
// replies carry that message's msg_id, at most five per message, within 60
// minutes in single chats and 5 minutes in groups); every reply to one
// msg_id carries a msg_seq the platform requires to be new. The channel
// counts msg_seq per msg_id, answers a message that replies to nothing in
// particular (a pairing code, cron output) as a reply to the chat's latest
// message, and falls back to an active message (no msg_id) when the
// passive window is used up. QQ cannot edit messages, so the
// channel is not an Editor: a streamed reply arrives whole at its end.
//
// Chat ids: a single chat is the user's openid; a group is "group:<group
// openid>"; a guild direct message is "dms:<guild id>". Sender ids are the
// platform's openids: user_openid in single chats, member_openid in groups
// (QQ gives one user different openids per context), author id in guild DMs.
//
// Concurrency: Send and SendMedia use only REST and may be called from any
// goroutine, concurrently with Run and with each other; the msg_seq counter
// they share is under a lock. Each connection has a reader and a heartbeat
// goroutine, and one worker of Run's hands the dispatches to the Inbox in
// order; Run stops the worker, and each connection its heartbeat, before
// returning.
package qq

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/kit"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/redact"
)

// Config is channels.qq.
type Config struct {
	configs.ChannelCommon
	// AppID is the bot's AppID (q.qq.com > your bot > 开发 > 开发设置).
	AppID string `json:"appId"`
	// Secret is the bot's AppSecret from the same page.
	Secret string `json:"secret"`
	// MsgFormat is "plain" (default: Markdown is flattened to text) or
	// "markdown" (native QQ Markdown messages, msg_type 2; the bot needs
	// the Markdown permission on the platform).
	MsgFormat string `json:"msgFormat"`
	// AckMessage, when set, is answered at once to every accepted message
	// (for example "收到，思考中…"), before the agent's reply. It uses one
	// of the five passive replies QQ allows per message.
	AckMessage string `json:"ackMessage"`
	// GroupConfig: "mention" (default) takes group messages the bot is
	// @-mentioned in, the only ones QQ delivers to ordinary bots; "open"
	// also takes GROUP_MESSAGE_CREATE, which QQ sends only to bots granted
	// every group message; the allowlist lists group openids.
	channels.GroupConfig
	// APIBase replaces https://api.sgroup.qq.com (the sandbox is
	// https://sandbox.api.sgroup.qq.com; tests use a local fake).
	APIBase string `json:"apiBase"`
	// AuthBase replaces https://bots.qq.com, where the access token comes
	// from (POST /app/getAppAccessToken).
	AuthBase string `json:"authBase"`
	// MaxMediaBytes caps one attachment downloaded for the agent, and one
	// file uploaded (default 20 MB).
	MaxMediaBytes int64 `json:"maxMediaBytes"`
}

// Message formats.
const (
	FormatPlain    = "plain"
	FormatMarkdown = "markdown"
)

// Default hosts.
const (
	DefaultAPIBase  = "https://api.sgroup.qq.com"
	DefaultAuthBase = "https://bots.qq.com"
)

// DefaultConfig is disabled, with the defaults of every option.
func DefaultConfig() Config {
	return Config{
		MsgFormat: FormatPlain, GroupConfig: channels.GroupConfig{GroupPolicy: channels.GroupMention},
		APIBase: DefaultAPIBase, AuthBase: DefaultAuthBase, MaxMediaBytes: 20 << 20,
	}
}

// Validate checks the config; errors name the key under channels.qq and
// never contain the secret.
func (c Config) Validate() error {
	var p channels.Problems
	p.Required(c.AppID, "appId is required (q.qq.com > your bot > 开发设置 > AppID)")
	p.Required(c.Secret, "secret is required (q.qq.com > your bot > 开发设置 > AppSecret)")
	p.OneOf("msgFormat", c.MsgFormat, FormatPlain, FormatMarkdown)
	p.Add(c.GroupConfig.Check())
	p.URL("apiBase", c.APIBase)
	p.URL("authBase", c.AuthBase)
	p.NonNegative("maxMediaBytes", c.MaxMediaBytes)
	return p.Err()
}

// Factory registers the channel: registry.Register("qq", qq.Factory()).
func Factory() channels.Factory {
	return channels.NewFactory("qq", DefaultConfig, New)
}

// Channel is the QQ adapter.
type Channel struct {
	cfg      Config
	log      *slog.Logger
	redact   *redact.Redactor
	tokens   *kit.TokenCache
	api      *kit.Client
	auth     *kit.Client
	http     *http.Client // REST, token and attachment downloads
	mediaDir string       // where attachments are saved ("" = not downloaded)
	dedup    *kit.Dedup
	health   channels.HealthState
	replies  *replies

	// Timing, fixed by New; tests in this package shorten them.
	backoffMin, backoffMax time.Duration

	mu        sync.Mutex
	session   gwSession // survives reconnects, for Resume
	botID     string
	conns     int                     // connections made so far; the last is the live one
	live      context.CancelCauseFunc // ends the live connection
	abandoned int                     // events of connections up to this one are dropped
}

var (
	_ channels.Channel        = (*Channel)(nil)
	_ channels.Limiter        = (*Channel)(nil)
	_ channels.MediaSender    = (*Channel)(nil)
	_ channels.HealthReporter = (*Channel)(nil)
)

// New builds the channel. It does no IO: Run connects.
func New(cfg Config, deps channels.Deps) (*Channel, error) {
	channels.FillDefaults(&cfg, DefaultConfig())
	cfg.AppID, cfg.Secret = strings.TrimSpace(cfg.AppID), strings.TrimSpace(cfg.Secret)
	cfg.APIBase, cfg.AuthBase = strings.TrimRight(cfg.APIBase, "/"), strings.TrimRight(cfg.AuthBase, "/")
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	c := &Channel{
		cfg:        cfg,
		log:        deps.Logger(),
		mediaDir:   deps.MediaDir("qq"),
		redact:     deps.Redactor(cfg.Secret),
		http:       &http.Client{Transport: transport, Timeout: 2 * time.Minute},
		dedup:      kit.NewDedup(0),
		replies:    newReplies(),
		backoffMin: time.Second,
		backoffMax: time.Minute,
	}
	c.tokens = kit.NewTokenCache(c.fetchToken)
	check := kit.Envelope("code", "message")
	c.auth = &kit.Client{Base: cfg.AuthBase, HTTP: c.http, Check: check, Redact: c.redact}
	c.api = &kit.Client{Base: cfg.APIBase, HTTP: c.http, Check: check, Redact: c.redact, Auth: c.tokens.Header("Authorization", "QQBot ")}
	return c, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "qq" }

// MessageLimit implements channels.Limiter. QQ documents no limit for the
// text of a message; 2000 characters is a conservative size that keeps a
// long answer within the five passive replies a message allows (a 10,000
// character answer still fits).
func (c *Channel) MessageLimit() int { return 2000 }

// Health implements channels.HealthReporter.
func (c *Channel) Health() channels.Health { return c.health.Get() }

// eventQueue is how many dispatches may wait for the worker; when it is
// full the gateway reader waits (back-pressure).
const eventQueue = 256

// Run connects to the gateway and delivers messages to in until ctx ends;
// it returns nil then. It reconnects (resuming the session) after network
// failures, op 7 and dead heartbeats; only credentials or permissions the
// platform rejects end it early.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	events := make(chan event, eventQueue)
	stop := channels.Work(ctx, events, func(ctx context.Context, ev event) { c.work(ctx, in, ev) })
	loop := &channels.Loop{Name: "qq", Log: c.log, Health: &c.health, Redact: c.redact.Error, Min: c.backoffMin, Max: c.backoffMax}
	err := loop.Run(ctx, func(ctx context.Context, up func()) error { return c.connect(ctx, up, events) })
	stop()
	c.http.CloseIdleConnections()
	return err
}

// work handles one queued dispatch; Run's worker calls it for each, in
// order.
func (c *Channel) work(ctx context.Context, in channels.Inbox, ev event) {
	if c.abandonedConn(ev.conn) {
		return // QQ replays it after the Resume
	}
	switch c.handle(ctx, in, ev) {
	case done:
		c.handled(ev)
	case retry:
		c.redeliver(ev.conn)
	}
}
