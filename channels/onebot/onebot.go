// Package onebot is the QQ channel through a OneBot v11 implementation
// (NapCat, Lagrange.OneBot, go-cqhttp and their kin), which logs in to QQ
// and speaks the OneBot v11 protocol to bots. The package speaks the
// protocol's "universal" websocket: one connection carrying events from the
// implementation and actions (with an echo the answer repeats) to it.
//
// Two directions, as the specification defines them:
//
//   - forward (mode "forward", the default): the gateway dials the
//     implementation's websocket server (url), sending the access token as
//     Authorization: Bearer. A 401/403 at the handshake is a rejected token
//     (channels.Fatal).
//   - reverse (mode "reverse"): the implementation dials the gateway, at
//     webhookPath on the gateway's HTTP server (default /onebot/ws). The
//     access token is required in this mode and checked (Authorization:
//     Bearer or Token, or ?access_token=) in constant time before the
//     upgrade; a wrong one gets 401. Only the Universal client role is
//     taken, and one implementation at a time: a second connection waits
//     until the first ends.
//
// Health: a connection counts as up once get_login_info answered (it names
// the bot's QQ number, self_id). The implementation's heartbeat meta events
// are watched: when one came with an interval and none followed for two
// and a half intervals, the connection is dropped as dead and (forward)
// dialled again with backoff, or (reverse) left for the implementation to
// re-establish. Lifecycle events are logged.
//
// Chats: a private chat's ChatID is the user's QQ number, a group's
// "group:<group number>"; SenderID is the user's QQ number. Messages come
// as segment arrays or CQ-code strings (both parsed): text, at, reply,
// face (as [face:id]), image (downloaded from its url into the media folder
// for admitted senders) and the rest as short notes. In groups groupPolicy
// "mention" (the default) takes messages that at-mention the bot or reply
// to one of its recent messages; the mention is stripped. groupAllowFrom
// lists group numbers.
//
// Sending: send_private_msg / send_group_msg with a segment array, text as
// plain text (QQ renders no Markdown), a reply segment quoting the message
// answered; images as image segments with base64:// content (or file://
// paths with imageMode "file", when the implementation shares the
// gateway's file system). OneBot v11 cannot edit messages or show typing,
// so replies are not streamed.
//
// Concurrency: Send and SendMedia are called concurrently with each other
// and with Run; they use the live connection and fail while there is none
// (the dispatcher retries). The webhook handler may be called at any time;
// it answers 503 while Run is not running. Shared state is behind mu.
package onebot

import (
	"crypto/subtle"
	"errors"
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

// Modes.
const (
	ModeForward = "forward"
	ModeReverse = "reverse"
)

// Image modes.
const (
	ImageBase64 = "base64"
	ImageFile   = "file"
)

// DefaultWebhookPath is where reverse connections are taken.
const DefaultWebhookPath = "/onebot/ws"

// Config is channels.onebot.
type Config struct {
	configs.ChannelCommon
	// Mode is "forward" (default: the gateway dials url) or "reverse" (the
	// implementation dials the gateway at webhookPath).
	Mode string `json:"mode"`
	// URL is the implementation's websocket server in forward mode
	// ("ws://127.0.0.1:3001").
	URL string `json:"url"`
	// AccessToken is the implementation's access_token (required in reverse
	// mode, where it is all that keeps strangers off the endpoint).
	AccessToken string `json:"accessToken"`
	// WebhookPath is where reverse connections are taken (default
	// /onebot/ws).
	WebhookPath string `json:"webhookPath"`
	// GroupConfig: "mention" (default) answers in groups only messages
	// that @mention the bot or reply to it; the allowlist lists group
	// numbers.
	channels.GroupConfig
	// ImageMode is how images are sent: "base64" (default, works across
	// machines) or "file" (a file:// path the implementation reads itself).
	ImageMode string `json:"imageMode"`
	// MaxMediaBytes caps one image, both ways (default 10 MB).
	MaxMediaBytes int64 `json:"maxMediaBytes"`
}

// DefaultConfig is disabled, with the defaults of every option.
func DefaultConfig() Config {
	return Config{Mode: ModeForward, WebhookPath: DefaultWebhookPath, GroupConfig: channels.GroupConfig{GroupPolicy: channels.GroupMention}, ImageMode: ImageBase64, MaxMediaBytes: 10 << 20}
}

// Validate checks the config; errors name the key under channels.onebot
// and never contain the token.
func (c Config) Validate() error {
	var p channels.Problems
	switch c.Mode {
	case ModeForward:
		if strings.TrimSpace(c.URL) == "" {
			p.Addf("url: required in forward mode (the implementation's websocket server, ws://127.0.0.1:3001)")
		} else if !strings.HasPrefix(c.URL, "ws://") && !strings.HasPrefix(c.URL, "wss://") {
			p.Addf("url: %q must start with ws:// or wss://", c.URL)
		}
	case ModeReverse:
		p.Required(c.AccessToken, "accessToken: required in reverse mode (set the same access_token in the implementation's reverse websocket settings)")
		p.Path("webhookPath", c.WebhookPath)
	default:
		p.Addf("mode: %q is not %q or %q", c.Mode, ModeForward, ModeReverse)
	}
	p.OneOf("imageMode", c.ImageMode, ImageBase64, ImageFile)
	p.Add(c.GroupConfig.Check())
	p.NonNegative("maxMediaBytes", c.MaxMediaBytes)
	return p.Err()
}

// Factory registers the channel: registry.Register("onebot", onebot.Factory()).
func Factory() channels.Factory {
	return channels.NewFactory("onebot", DefaultConfig, New)
}

// Channel is the OneBot v11 adapter.
type Channel struct {
	cfg      Config
	log      *slog.Logger
	redact   *redact.Redactor
	http     *http.Client
	mediaDir string
	health   channels.HealthState

	// Timing, fixed by New; tests in this package shorten them.
	callTimeout            time.Duration
	watchEvery             time.Duration
	backoffMin, backoffMax time.Duration

	mu     sync.Mutex
	live   *conn      // the connection actions go through, nil while down
	incom  chan *conn // reverse connections offered to Run; nil while Run is not running
	selfID string     // the bot's QQ number
	mine   *kit.Dedup // ids of messages the bot sent (replies to them address it)
}

var (
	_ channels.Channel        = (*Channel)(nil)
	_ channels.Limiter        = (*Channel)(nil)
	_ channels.MediaSender    = (*Channel)(nil)
	_ channels.HealthReporter = (*Channel)(nil)
	_ channels.WebhookHandler = (*Channel)(nil)
)

// New builds the channel. It does no IO: Run connects.
func New(cfg Config, deps channels.Deps) (*Channel, error) {
	channels.FillDefaults(&cfg, DefaultConfig())
	cfg.URL, cfg.AccessToken = strings.TrimSpace(cfg.URL), strings.TrimSpace(cfg.AccessToken)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Channel{
		cfg: cfg, log: deps.Logger(), redact: deps.Redactor(cfg.AccessToken), mediaDir: deps.MediaDir("onebot"),
		http:        &http.Client{Timeout: time.Minute},
		callTimeout: 30 * time.Second, watchEvery: time.Second,
		backoffMin: time.Second, backoffMax: time.Minute,
		mine: kit.NewDedup(500),
	}
	return c, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "onebot" }

// MessageLimit implements channels.Limiter. QQ takes about 4,500
// characters in one message; 4,000 leaves room for the reply segment.
func (c *Channel) MessageLimit() int { return 4000 }

// Health implements channels.HealthReporter.
func (c *Channel) Health() channels.Health { return c.health.Get() }

// WebhookPath implements channels.WebhookHandler: the reverse endpoint,
// mounted only in reverse mode.
func (c *Channel) WebhookPath() string {
	if c.cfg.Mode != ModeReverse {
		return ""
	}
	return c.cfg.WebhookPath
}

// ErrUnauthorized is returned by Run (as a channels.FatalError) when the
// implementation rejects the access token.
var ErrUnauthorized = errors.New("onebot: the implementation rejected the access token; check channels.onebot.accessToken against its access_token setting")

// tokenMatches compares the token a reverse connection presents.
func (c *Channel) tokenMatches(r *http.Request) bool {
	got := r.URL.Query().Get("access_token")
	if h := r.Header.Get("Authorization"); h != "" {
		if v, ok := strings.CutPrefix(h, "Bearer "); ok {
			got = v
		} else if v, ok := strings.CutPrefix(h, "Token "); ok {
			got = v
		}
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(c.cfg.AccessToken)) == 1
}

func (c *Channel) sentByMe(id string) bool { return c.mine.Has(id) }

func (c *Channel) self() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.selfID
}
