// Package teams is the Microsoft Teams channel: a Bot Framework bot (an
// Azure Bot resource with the Teams channel on) whose messaging endpoint is
// the gateway's HTTP server.
//
// Inbound: the Bot Connector POSTs activities to webhookPath (default
// /teams/messages) with a JWT in Authorization. Every request's token is
// checked before its body is read as an activity: signed with RS256 by a
// key from the Bot Connector's OpenID metadata (jwks_uri; keys cached for a
// day and fetched again when a token names an unknown kid, at most once a
// minute), issuer https://api.botframework.com, audience the app id, not
// expired (five minutes of clock skew, as Microsoft specifies), and its
// serviceurl claim equal to the activity's serviceUrl. Anything else gets
// 401 and never reaches the gateway. With tenantId set, activities from
// other tenants are refused (403). A message is delivered before the
// Connector gets its 200; one the gateway could not take gets a 500.
//
// Outbound: the Connector REST API at the activity's serviceUrl
// (remembered per conversation): POST /v3/conversations/{id}/activities/{replyToId}
// for answers, PUT …/activities/{id} for streaming edits, a "typing"
// activity for the typing indicator; Markdown is sent as is (textFormat
// markdown). The bearer token comes from the client-credentials grant at
// the login endpoint (the botframework.com tenant, or tenantId for
// single-tenant bots), cached until shortly before it expires and fetched
// again after a 401.
//
// Chats: ChatID is the conversation id. Personal chats are direct; group
// chats and channels are groups, where groupPolicy "mention" (the default)
// takes messages that @mention the bot; the <at>…</at> mention is
// stripped. SenderID is "<Teams user id>|<AAD object id>", so allowFrom may
// list either.
//
// Concurrency: Send, Edit, Typing and the webhook handler may be called
// from any goroutine; the handler answers 503 while Run is not running.
// Shared state is behind mu; the key and token caches guard themselves.
package teams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/kit"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/redact"
)

// Bot Framework endpoints.
const (
	DefaultOpenIDMetadataURL = "https://login.botframework.com/v1/.well-known/openidconfiguration"
	DefaultWebhookPath       = "/teams/messages"
	// Issuer is the Bot Connector's token issuer.
	Issuer = "https://api.botframework.com"
	// scope is what the bot's own tokens are for.
	scope = "https://api.botframework.com/.default"
)

// Config is channels.teams.
type Config struct {
	configs.ChannelCommon
	// AppID is the bot's Microsoft App ID (Azure Bot > Configuration).
	AppID string `json:"appId"`
	// AppPassword is a client secret of that app registration.
	AppPassword string `json:"appPassword"`
	// TenantID is the Azure AD tenant of a single-tenant bot; its tokens
	// come from that tenant and activities from other tenants are refused.
	// Empty: a multi-tenant bot (tokens from botframework.com).
	TenantID string `json:"tenantId"`
	// WebhookPath is where the gateway takes activities (default
	// /teams/messages); the messaging endpoint in Azure is the gateway's
	// public HTTPS address plus this path.
	WebhookPath string `json:"webhookPath"`
	// GroupConfig: "mention" (default) answers in group chats and
	// channels only messages that @mention the bot; the allowlist lists
	// conversation ids.
	channels.GroupConfig
	// Streaming edits the answer in place while it is written (default
	// true).
	Streaming bool `json:"streaming"`
	// OpenIDMetadataURL replaces the Bot Connector's OpenID metadata (tests).
	OpenIDMetadataURL string `json:"openIdMetadataUrl"`
	// LoginURL replaces the token endpoint (tests, sovereign clouds).
	LoginURL string `json:"loginUrl"`
}

// DefaultConfig is disabled, with the defaults of every option.
func DefaultConfig() Config {
	return Config{WebhookPath: DefaultWebhookPath, GroupConfig: channels.GroupConfig{GroupPolicy: channels.GroupMention}, Streaming: true, OpenIDMetadataURL: DefaultOpenIDMetadataURL}
}

// loginURL is the token endpoint for the config.
func (c Config) loginURL() string {
	if c.LoginURL != "" {
		return c.LoginURL
	}
	tenant := "botframework.com"
	if c.TenantID != "" {
		tenant = url.PathEscape(c.TenantID)
	}
	return "https://login.microsoftonline.com/" + tenant + "/oauth2/v2.0/token"
}

// Validate checks the config; errors name the key under channels.teams
// and never contain the password.
func (c Config) Validate() error {
	var p channels.Problems
	p.Required(c.AppID, "appId: required (Azure Bot > Configuration > Microsoft App ID)")
	p.Required(c.AppPassword, "appPassword: required (a client secret of the bot's app registration)")
	p.Path("webhookPath", c.WebhookPath)
	p.URL("openIdMetadataUrl", c.OpenIDMetadataURL)
	if c.LoginURL != "" {
		p.URL("loginUrl", c.LoginURL)
	}
	p.Add(c.GroupConfig.Check())
	return p.Err()
}

// Factory registers the channel: registry.Register("teams", teams.Factory()).
func Factory() channels.Factory {
	return channels.NewFactory("teams", DefaultConfig, New)
}

// Channel is the Teams adapter.
type Channel struct {
	cfg    Config
	log    *slog.Logger
	redact *redact.Redactor
	http   *http.Client
	keys   *keySet
	tokens *kit.TokenCache
	api    *kit.Client
	health channels.HealthState

	editInterval           time.Duration
	backoffMin, backoffMax time.Duration

	mu       sync.Mutex
	inbox    channels.Inbox       // set while Run runs
	services map[string]string    // conversation id -> service URL
	bots     map[string]botMember // conversation id -> the bot's account there
}

// botMember is the bot's account in a conversation (the recipient of the
// activities it gets), used as "from" of its answers.
type botMember struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

var (
	_ channels.Channel            = (*Channel)(nil)
	_ channels.Editor             = (*Channel)(nil)
	_ channels.CapabilityReporter = (*Channel)(nil)
	_ channels.Limiter            = (*Channel)(nil)
	_ channels.Typer              = (*Channel)(nil)
	_ channels.HealthReporter     = (*Channel)(nil)
	_ channels.WebhookHandler     = (*Channel)(nil)
)

// New builds the channel. It does no IO: Run fetches the keys and a token.
func New(cfg Config, deps channels.Deps) (*Channel, error) {
	cfg.AppID, cfg.AppPassword, cfg.TenantID = strings.TrimSpace(cfg.AppID), strings.TrimSpace(cfg.AppPassword), strings.TrimSpace(cfg.TenantID)
	channels.FillDefaults(&cfg, DefaultConfig())
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	hc := &http.Client{Timeout: time.Minute}
	rd := deps.Redactor(cfg.AppPassword)
	c := &Channel{
		cfg: cfg, log: deps.Logger(), redact: rd, http: hc,
		editInterval: 1500 * time.Millisecond, backoffMin: time.Second, backoffMax: time.Minute,
		services: map[string]string{}, bots: map[string]botMember{},
	}
	c.keys = &keySet{metadataURL: cfg.OpenIDMetadataURL, http: hc, maxAge: 24 * time.Hour, minRefresh: time.Minute}
	c.tokens = kit.NewTokenCache(c.fetchToken)
	c.api = &kit.Client{HTTP: hc, Redact: rd, Auth: c.tokens.Header("Authorization", "Bearer ")}
	return c, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "teams" }

// MessageLimit implements channels.Limiter. Teams takes about 28 KB per
// message including markup; 12,000 characters stays well below it.
func (c *Channel) MessageLimit() int { return 12000 }

// EditInterval implements channels.Editor: Teams throttles a bot at about
// seven operations a second per conversation; an edit every 1.5 s leaves
// room for other chats.
func (c *Channel) EditInterval() time.Duration { return c.editInterval }

// Capabilities implements channels.CapabilityReporter.
func (c *Channel) Capabilities() channels.Capabilities {
	return channels.Capabilities{Edit: c.cfg.Streaming}
}

// Health implements channels.HealthReporter.
func (c *Channel) Health() channels.Health { return c.health.Get() }

// WebhookPath implements channels.WebhookHandler.
func (c *Channel) WebhookPath() string { return c.cfg.WebhookPath }

// ErrUnauthorized is returned by Run (as a channels.FatalError) when the
// login endpoint rejects the app id or password.
var ErrUnauthorized = errors.New("teams: the login endpoint rejected the app id or password; check channels.teams.appId and appPassword (a client secret of the bot's app registration)")

// Run fetches the signing keys and a token, then takes activities through
// the webhook until ctx ends; it returns nil then. Rejected credentials end
// it early with a channels.FatalError.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	loop := &channels.Loop{Name: "teams", Log: c.log, Health: &c.health, Redact: c.redact.Error, Min: c.backoffMin, Max: c.backoffMax}
	err := loop.Run(ctx, func(ctx context.Context, up func()) error {
		if err := c.keys.refresh(ctx); err != nil {
			return err
		}
		if _, err := c.tokens.Get(ctx); err != nil {
			var ae *kit.APIError
			if errors.As(err, &ae) && (ae.Status == http.StatusBadRequest || ae.Status == http.StatusUnauthorized) {
				return channels.Fatal(fmt.Errorf("%w (%s)", ErrUnauthorized, c.redact.Error(err)))
			}
			return fmt.Errorf("teams: getting a token: %s", c.redact.Error(err))
		}
		c.mu.Lock()
		c.inbox = in
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			c.inbox = nil
			c.mu.Unlock()
		}()
		c.log.Info("teams: ready", "webhook_path", c.cfg.WebhookPath)
		up()
		<-ctx.Done()
		return nil
	})
	c.http.CloseIdleConnections()
	return err
}
