// Package line is the LINE channel: a LINE Official Account through the
// Messaging API, with the official SDK (github.com/line/line-bot-sdk-go/v8).
//
// Inbound is LINE's webhook, mounted on the gateway's HTTP server at
// webhookPath. Every request's X-Line-Signature (base64 HMAC-SHA256 of the
// raw body with the channel secret) is checked before the body is parsed; a
// bad one gets 400. Events are delivered to the gateway before LINE gets
// its 200, and a request whose messages the gateway could not take gets a
// 500, so LINE redelivers it when webhook redelivery is on (duplicates are
// dropped by webhook event id). Images, videos, audio and files are
// downloaded from the content endpoint (api-data.line.me) into the media
// folder, for senders the gate admits only.
//
// Outbound: the first message that answers an inbound one uses its reply
// token (free of charge, valid for about a minute, usable once); every later
// message, chunk or one whose token expired is pushed (/v2/bot/message/push,
// counted against the account's message quota) with an X-Line-Retry-Key
// derived from the dispatcher's idempotency key, so a retried push shows
// once. Text is plain (LINE renders no Markdown), at most 5,000 characters
// per message. Typing is the loading animation, which LINE shows in one-on-
// one chats only. LINE messages cannot be edited, so replies are not
// streamed, and files are not sent (LINE takes media only as public HTTPS
// URLs).
//
// Chats: a one-on-one chat's id is the user id (U…), a group's the group id
// (C…), a multi-person chat's the room id (R…); the sender id is the user
// id. In groups and rooms, groupPolicy "mention" (the default) takes only
// messages that @mention the bot.
//
// Concurrency: Send, Typing and the webhook handler may be called from any
// goroutine; the handler answers 503 while Run is not running. The SDK
// client keeps a context in itself, so every call builds its own.
package line

import (
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

// Config is channels.line.
type Config struct {
	configs.ChannelCommon
	// ChannelSecret is the channel secret (LINE Developers console >
	// your Messaging API channel > Basic settings); it signs webhooks.
	ChannelSecret string `json:"channelSecret"`
	// ChannelAccessToken is a long-lived channel access token (same
	// channel > Messaging API > Channel access token).
	ChannelAccessToken string `json:"channelAccessToken"`
	// WebhookPath is where the gateway's HTTP server takes LINE's
	// webhook (default /line/webhook); the Webhook URL in the console is
	// the gateway's public HTTPS address plus this path.
	WebhookPath string `json:"webhookPath"`
	// GroupConfig: "mention" (default) answers in groups and rooms only
	// messages that @mention the bot; the allowlist lists group or room ids.
	channels.GroupConfig
	// APIBase replaces https://api.line.me (tests, proxies).
	APIBase string `json:"apiBase"`
	// DataAPIBase replaces https://api-data.line.me, where message
	// content is downloaded.
	DataAPIBase string `json:"dataApiBase"`
	// MaxMediaBytes caps one attachment downloaded (default 20 MB).
	MaxMediaBytes int64 `json:"maxMediaBytes"`
}

// LINE's endpoints.
const (
	DefaultAPIBase     = "https://api.line.me"
	DefaultDataAPIBase = "https://api-data.line.me"
	DefaultWebhookPath = "/line/webhook"
)

// DefaultConfig is disabled, with the defaults of every option.
func DefaultConfig() Config {
	return Config{WebhookPath: DefaultWebhookPath, GroupConfig: channels.GroupConfig{GroupPolicy: channels.GroupMention}, APIBase: DefaultAPIBase,
		DataAPIBase: DefaultDataAPIBase, MaxMediaBytes: 20 << 20}
}

// Validate checks the config; errors name the key under channels.line and
// never contain the secrets.
func (c Config) Validate() error {
	var p channels.Problems
	p.Required(c.ChannelSecret, "channelSecret is required (LINE Developers console > your channel > Basic settings > Channel secret)")
	p.Required(c.ChannelAccessToken, "channelAccessToken is required (LINE Developers console > your channel > Messaging API > Channel access token)")
	p.Path("webhookPath", c.WebhookPath)
	p.URL("apiBase", c.APIBase)
	p.URL("dataApiBase", c.DataAPIBase)
	p.Add(c.GroupConfig.Check())
	p.NonNegative("maxMediaBytes", c.MaxMediaBytes)
	return p.Err()
}

// Factory registers the channel: registry.Register("line", line.Factory()).
func Factory() channels.Factory {
	return channels.NewFactory("line", DefaultConfig, New)
}

// Channel is the LINE adapter.
type Channel struct {
	cfg      Config
	log      *slog.Logger
	redact   *redact.Redactor
	http     *http.Client
	mediaDir string
	dedup    *kit.Dedup
	health   channels.HealthState

	// replyTTL is how long a reply token is used after its message came
	// (LINE keeps it about a minute); tests shorten it.
	replyTTL               time.Duration
	backoffMin, backoffMax time.Duration

	mu      sync.Mutex
	inbox   channels.Inbox         // set while Run runs
	botID   string                 // the bot's user id, from /v2/bot/info
	replies map[string]replyWindow // reply token -> when it came, while unused
}

type replyWindow struct {
	at time.Time
}

var (
	_ channels.Channel        = (*Channel)(nil)
	_ channels.Limiter        = (*Channel)(nil)
	_ channels.Typer          = (*Channel)(nil)
	_ channels.HealthReporter = (*Channel)(nil)
	_ channels.WebhookHandler = (*Channel)(nil)
)

// New builds the channel. It does no IO: Run checks the token.
func New(cfg Config, deps channels.Deps) (*Channel, error) {
	channels.FillDefaults(&cfg, DefaultConfig())
	cfg.ChannelSecret, cfg.ChannelAccessToken = strings.TrimSpace(cfg.ChannelSecret), strings.TrimSpace(cfg.ChannelAccessToken)
	cfg.APIBase, cfg.DataAPIBase = strings.TrimRight(cfg.APIBase, "/"), strings.TrimRight(cfg.DataAPIBase, "/")
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Channel{
		cfg: cfg, log: deps.Logger(), redact: deps.Redactor(cfg.ChannelSecret, cfg.ChannelAccessToken), mediaDir: deps.MediaDir("line"),
		http: &http.Client{Timeout: time.Minute}, dedup: kit.NewDedup(0),
		replyTTL: 50 * time.Second, backoffMin: time.Second, backoffMax: time.Minute,
		replies: map[string]replyWindow{},
	}
	return c, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "line" }

// MessageLimit implements channels.Limiter: LINE's text message limit.
func (c *Channel) MessageLimit() int { return maxText }

// maxText is LINE's limit of one text message, in characters (counted in
// UTF-16 units; Send splits further when emoji push a part over).
const maxText = 5000

// Health implements channels.HealthReporter.
func (c *Channel) Health() channels.Health { return c.health.Get() }

// WebhookPath implements channels.WebhookHandler.
func (c *Channel) WebhookPath() string { return c.cfg.WebhookPath }
