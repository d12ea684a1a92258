// Package dingtalk is the DingTalk (钉钉) channel: an enterprise-internal
// robot that receives messages over DingTalk's stream mode (a JSON
// websocket opened through /v1.0/gateway/connections/open, no public
// callback URL needed) and answers through the robot REST API.
//
// Receiving: each session asks the gateway for an endpoint and a one-time
// ticket, dials the websocket and handles its frames: SYSTEM ping (echoed),
// SYSTEM disconnect (acknowledged, then the session ends and kit.Loop opens
// a new one) and CALLBACK frames for /v1.0/im/bot/messages/get, which are
// acknowledged with code 200 only after the message was handed to the
// gateway (or refused by it). Unknown topics get a 404 ack.
//
// Sending: direct chats through /v1.0/robot/oToMessages/batchSend to the
// sender's staff id, groups through /v1.0/robot/groupMessages/send to the
// openConversationId, both as sampleMarkdown. DingTalk robots cannot edit
// a sent message, so the channel is not an Editor: a streamed reply is sent
// once, when it is complete. AI-card streaming exists on the platform but
// is not implemented (not verified).
package dingtalk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/kit"
	"github.com/nanobot-go/nanobot/configs"
)

// Config is channels.dingtalk.
type Config struct {
	configs.ChannelCommon
	// ClientID is the robot application's Client ID (formerly AppKey); it
	// is also the robotCode used when sending.
	ClientID string `json:"clientId"`
	// ClientSecret is the application's Client Secret (formerly AppSecret).
	ClientSecret string `json:"clientSecret"`
	// GroupUserIsolation gives every member of a group their own
	// conversation with the bot instead of one shared per group.
	GroupUserIsolation bool `json:"groupUserIsolation"`
	// DisablePrivateChat ignores direct (one-to-one) messages.
	DisablePrivateChat bool `json:"disablePrivateChat"`
	// GroupPolicy is "mention" (default: answer in groups only when the
	// bot is @-mentioned) or "open" (every group message delivered to the
	// robot).
	GroupPolicy string `json:"groupPolicy"`
	// APIBase replaces https://api.dingtalk.com (tests, proxies).
	APIBase string `json:"apiBase"`
	// OAPIBase replaces https://oapi.dingtalk.com (tests, proxies). Kept
	// for the legacy media upload; no call uses it yet.
	OAPIBase string `json:"oapiBase"`
	// MaxMediaBytes caps one downloaded attachment (default 20 MB).
	MaxMediaBytes int64 `json:"maxMediaBytes"`
}

// Group policies.
const (
	PolicyMention = "mention"
	PolicyOpen    = "open"
)

// Default hosts.
const (
	DefaultAPIBase  = "https://api.dingtalk.com"
	DefaultOAPIBase = "https://oapi.dingtalk.com"
)

// DefaultConfig is disabled, with the defaults of every option.
func DefaultConfig() Config {
	return Config{GroupPolicy: PolicyMention, APIBase: DefaultAPIBase, OAPIBase: DefaultOAPIBase, MaxMediaBytes: 20 << 20}
}

// Validate checks the config; errors name the key under channels.dingtalk.
func (c Config) Validate() error {
	var errs []error
	if strings.TrimSpace(c.ClientID) == "" {
		errs = append(errs, errors.New("clientId is required (developer console > your app > Credentials)"))
	}
	if strings.TrimSpace(c.ClientSecret) == "" {
		errs = append(errs, errors.New("clientSecret is required (developer console > your app > Credentials)"))
	}
	if c.GroupPolicy != PolicyMention && c.GroupPolicy != PolicyOpen {
		errs = append(errs, fmt.Errorf("groupPolicy: %q is not %q or %q", c.GroupPolicy, PolicyMention, PolicyOpen))
	}
	for key, v := range map[string]string{"apiBase": c.APIBase, "oapiBase": c.OAPIBase} {
		if u, err := url.Parse(v); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			errs = append(errs, fmt.Errorf("%s: %q is not an http(s) URL", key, v))
		}
	}
	if c.MaxMediaBytes < 0 {
		errs = append(errs, errors.New("maxMediaBytes: must not be negative"))
	}
	return errors.Join(errs...)
}

// Factory registers the channel: registry.Register("dingtalk", dingtalk.Factory()).
func Factory() channels.Factory {
	return channels.NewFactory("dingtalk", DefaultConfig, New)
}

// Channel is the DingTalk adapter.
type Channel struct {
	cfg      Config
	log      *slog.Logger
	api      *kit.Client
	tokens   *kit.TokenCache
	redact   *kit.Redactor
	dedup    *kit.Dedup
	files    *http.Client // downloads from downloadUrl (no token)
	http     *http.Client // REST calls and the websocket dial
	mediaDir string
	health   channels.HealthState

	// Timing, fixed by New; tests in this package shorten them.
	backoffMin, backoffMax time.Duration
}

var (
	_ channels.Channel        = (*Channel)(nil)
	_ channels.Limiter        = (*Channel)(nil)
	_ channels.HealthReporter = (*Channel)(nil)
)

// New builds the channel. It does no IO: Run connects.
func New(cfg Config, deps channels.Deps) (*Channel, error) {
	if cfg.GroupPolicy == "" {
		cfg.GroupPolicy = PolicyMention
	}
	if cfg.APIBase == "" {
		cfg.APIBase = DefaultAPIBase
	}
	if cfg.OAPIBase == "" {
		cfg.OAPIBase = DefaultOAPIBase
	}
	cfg.APIBase, cfg.OAPIBase = strings.TrimRight(cfg.APIBase, "/"), strings.TrimRight(cfg.OAPIBase, "/")
	if cfg.MaxMediaBytes == 0 {
		cfg.MaxMediaBytes = 20 << 20
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("dingtalk: %w", err)
	}
	log := deps.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Channel{
		cfg:        cfg,
		log:        log,
		redact:     kit.NewRedactor(cfg.ClientSecret),
		dedup:      kit.NewDedup(kit.DefaultDedupSize),
		backoffMin: time.Second,
		backoffMax: time.Minute,
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	c.http = &http.Client{Transport: transport, Timeout: 30 * time.Second}
	c.files = &http.Client{Transport: transport, Timeout: 2 * time.Minute}
	if deps.Paths.Media != "" {
		c.mediaDir = filepath.Join(deps.Paths.Media, "dingtalk")
	}
	c.api = &kit.Client{Base: cfg.APIBase, HTTP: c.http, Redact: c.redact, Check: kit.Envelope("code", "message", "0", "200", "OK"), Auth: c.auth}
	c.tokens = kit.NewTokenCache(c.fetchToken)
	return c, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "dingtalk" }

// MessageLimit implements channels.Limiter. DingTalk documents no exact
// limit for sampleMarkdown; 4000 characters stays well inside what it
// accepts.
func (c *Channel) MessageLimit() int { return 4000 }

// Health implements channels.HealthReporter.
func (c *Channel) Health() channels.Health { return c.health.Get() }

// fetchToken gets an application access token.
func (c *Channel) fetchToken(ctx context.Context) (string, time.Duration, error) {
	var out struct {
		AccessToken string `json:"accessToken"`
		ExpireIn    int64  `json:"expireIn"`
	}
	plain := &kit.Client{Base: c.cfg.APIBase, HTTP: c.http, Redact: c.redact, Check: c.api.Check}
	err := plain.Do(ctx, http.MethodPost, "/v1.0/oauth2/accessToken",
		map[string]string{"appKey": c.cfg.ClientID, "appSecret": c.cfg.ClientSecret}, &out)
	if err != nil {
		return "", 0, err
	}
	c.redact.Add(out.AccessToken)
	ttl := time.Duration(out.ExpireIn) * time.Second
	if ttl <= 0 {
		ttl = 2 * time.Hour
	}
	return out.AccessToken, ttl, nil
}

// auth puts the access token on a REST request.
func (c *Channel) auth(ctx context.Context, req *http.Request) error {
	tok, err := c.tokens.Get(ctx)
	if err != nil {
		return err
	}
	req.Header.Set("x-acs-dingtalk-access-token", tok)
	return nil
}

// call is api.Do, retried once with a fresh token when the token was
// rejected.
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
