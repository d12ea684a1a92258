// Package dingtalk is the DingTalk (钉钉) channel: an enterprise internal
// app's robot in stream mode, so no public callback URL is needed.
//
// Receiving: the channel asks for a stream endpoint and a one-time ticket
// (POST /v1.0/gateway/connections/open, subscribed to the robot message
// topic), connects a websocket and reads JSON frames. Every frame is
// acknowledged ({code:200, headers.messageId}); a robot message only after
// it was handed to the gateway, so DingTalk delivers it again when the
// gateway could not take it. SYSTEM ping frames are echoed; a SYSTEM
// disconnect is acknowledged and answered by opening a new connection.
//
// Sending: the robot APIs with an access token (POST
// /v1.0/oauth2/accessToken, cached until shortly before it expires): group
// chats by /v1.0/robot/groupMessages/send, one-to-one chats by
// /v1.0/robot/oToMessages/batchSend, as sampleMarkdown messages. DingTalk
// cannot edit robot messages: the channel is not an Editor.
//
// Chat ids: a one-to-one chat is the user's staff id, a group
// "group:<openConversationId>". The sender id is the staff id.
package dingtalk

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/kit"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/redact"
)

// Config is channels.dingtalk.
type Config struct {
	configs.ChannelCommon
	// ClientID is the app's Client ID (AppKey), from the DingTalk
	// developer console (应用开发 > 企业内部应用 > 凭证与基础信息).
	ClientID string `json:"clientId"`
	// ClientSecret is the app's Client Secret (AppSecret).
	ClientSecret string `json:"clientSecret"`
	// RobotCode is the robot's code (default: the Client ID, which it is for
	// robots made inside the app).
	RobotCode string `json:"robotCode"`
	// GroupUserIsolation gives each member of a group chat a conversation
	// (session) of their own with the bot.
	GroupUserIsolation bool `json:"groupUserIsolation"`
	// DisablePrivateChat ignores one-to-one chats (groups only).
	DisablePrivateChat bool `json:"disablePrivateChat"`
	// GroupConfig: "mention" (default) takes group messages that
	// @-mention the robot, "open" every group message DingTalk delivers;
	// the allowlist lists conversation ids ("cid...").
	channels.GroupConfig
	// APIBase replaces https://api.dingtalk.com (tests, proxies).
	APIBase string `json:"apiBase"`
	// MaxMediaBytes caps one attachment downloaded for the agent (20 MB).
	MaxMediaBytes int64 `json:"maxMediaBytes"`
}

// DefaultAPIBase is DingTalk's API host.
const DefaultAPIBase = "https://api.dingtalk.com"

// DefaultConfig is disabled, with the defaults of every option.
func DefaultConfig() Config {
	return Config{GroupConfig: channels.GroupConfig{GroupPolicy: channels.GroupMention}, APIBase: DefaultAPIBase, MaxMediaBytes: 20 << 20}
}

// Validate checks the config; errors name the key under channels.dingtalk
// and never contain the secret.
func (c Config) Validate() error {
	var p channels.Problems
	p.Required(c.ClientID, "clientId is required (developer console > your app > 凭证与基础信息 > Client ID)")
	p.Required(c.ClientSecret, "clientSecret is required (same page, Client Secret)")
	p.Add(c.GroupConfig.Check())
	p.URL("apiBase", c.APIBase)
	p.NonNegative("maxMediaBytes", c.MaxMediaBytes)
	return p.Err()
}

// Factory registers the channel: registry.Register("dingtalk", dingtalk.Factory()).
func Factory() channels.Factory {
	return channels.NewFactory("dingtalk", DefaultConfig, New)
}

// Channel is the DingTalk adapter.
type Channel struct {
	cfg      Config
	log      *slog.Logger
	redact   *redact.Redactor
	tokens   *kit.TokenCache
	api      *kit.Client // with the access token
	open     *kit.Client // token and stream endpoint (no token)
	http     *http.Client
	mediaDir string
	dedup    *kit.Dedup
	health   channels.HealthState

	// Timing, fixed by New; tests in this package shorten them.
	backoffMin, backoffMax time.Duration
	idle                   time.Duration // a silent socket this long is dead
}

var (
	_ channels.Channel        = (*Channel)(nil)
	_ channels.Limiter        = (*Channel)(nil)
	_ channels.HealthReporter = (*Channel)(nil)
)

// New builds the channel. It does no IO: Run connects.
func New(cfg Config, deps channels.Deps) (*Channel, error) {
	channels.FillDefaults(&cfg, DefaultConfig())
	cfg.ClientID, cfg.ClientSecret = strings.TrimSpace(cfg.ClientID), strings.TrimSpace(cfg.ClientSecret)
	if cfg.RobotCode == "" {
		cfg.RobotCode = cfg.ClientID
	}
	cfg.APIBase = strings.TrimRight(cfg.APIBase, "/")
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Channel{
		cfg: cfg, log: deps.Logger(), redact: deps.Redactor(cfg.ClientSecret), mediaDir: deps.MediaDir("dingtalk"),
		http:  &http.Client{Timeout: 2 * time.Minute},
		dedup: kit.NewDedup(0), backoffMin: time.Second, backoffMax: time.Minute, idle: 3 * time.Minute,
	}
	check := kit.Envelope("code", "message")
	c.open = &kit.Client{Base: cfg.APIBase, HTTP: c.http, Redact: c.redact, Check: check}
	c.tokens = kit.NewTokenCache(c.fetchToken)
	c.api = &kit.Client{Base: cfg.APIBase, HTTP: c.http, Redact: c.redact, Check: check,
		Auth: c.tokens.Header("x-acs-dingtalk-access-token", "")}
	return c, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "dingtalk" }

// MessageLimit implements channels.Limiter: long answers are split at 4000
// characters (a markdown message carries about 5000).
func (c *Channel) MessageLimit() int { return 4000 }

// Health implements channels.HealthReporter.
func (c *Channel) Health() channels.Health { return c.health.Get() }

// fetchToken gets an access token (kit.TokenFetcher).
func (c *Channel) fetchToken(ctx context.Context) (string, time.Duration, error) {
	var out struct {
		AccessToken string `json:"accessToken"`
		ExpireIn    int64  `json:"expireIn"`
	}
	err := c.open.Do(ctx, http.MethodPost, "/v1.0/oauth2/accessToken", map[string]string{"appKey": c.cfg.ClientID, "appSecret": c.cfg.ClientSecret}, &out)
	if err != nil {
		return "", 0, fmt.Errorf("dingtalk: access token: %w", err)
	}
	c.redact.Add(out.AccessToken)
	ttl := time.Duration(out.ExpireIn) * time.Second
	if ttl <= 0 {
		ttl = time.Hour
	}
	return out.AccessToken, ttl, nil
}

// call is an authenticated API call; a token DingTalk rejects early is
// dropped and the call tried once more with a new one.
func (c *Channel) call(ctx context.Context, path string, in, out any) error {
	err := c.api.Do(ctx, http.MethodPost, path, in, out)
	if kit.Unauthorized(err) {
		if tok, terr := c.tokens.Get(ctx); terr == nil {
			c.tokens.Invalidate(tok)
		}
		err = c.api.Do(ctx, http.MethodPost, path, in, out)
	}
	return err
}

// Run connects the stream and delivers messages to in until ctx ends; it
// returns nil then. It reconnects with backoff after failures and when
// DingTalk asks; rejected credentials end it.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	loop := &channels.Loop{Name: "dingtalk", Log: c.log, Health: &c.health, Redact: c.redact.Error, Min: c.backoffMin, Max: c.backoffMax}
	err := loop.Run(ctx, func(ctx context.Context, up func()) error { return c.stream(ctx, in, up) })
	c.http.CloseIdleConnections()
	return err
}
