// Package feishu is the Feishu / Lark channel: a custom app with the bot
// capability (made in the Feishu or Lark developer console) that talks to
// users in direct chats, groups and topic groups. It speaks the platform's
// protocols directly, without an SDK:
//
//   - Receiving is over the long connection ("长连接", no public URL
//     needed): POST /callback/ws/endpoint gives a websocket URL; every
//     message on it is a binary proto2 Frame (frame.go). Control frames
//     carry ping/pong; data frames carry events, possibly split across
//     several frames (headers sum/seq, reassembled by message_id), and are
//     acknowledged by echoing the frame with a {"code":200} payload — only
//     after the Inbox took the message.
//   - Sending is REST with a tenant_access_token (kit.TokenCache):
//     im/v1/messages (post messages with Markdown), reactions, image and
//     file uploads, resource downloads.
//   - Streaming is a CardKit card (cardkit.go): the first Send of a stream
//     creates a card entity in streaming mode and sends it as an
//     interactive message; edits put the element's full text with a
//     strictly increasing sequence, at least EditInterval apart; the end of
//     the stream turns streaming mode off. With streaming off the channel
//     is not an Editor and sends plain post messages.
//
// Ids: SenderID is the user's open_id (stable per app); ChatID is the
// chat_id (oc_…) for direct chats and groups alike. In topic groups (and
// threads) with topicIsolation each topic is its own session
// ("feishu:<chat_id>:<thread>") and replies go into the topic.
//
// Concurrency: Send, SendMedia, SendVoice, Edit, Finish and React use only
// REST and may be called from any goroutine, concurrently with Run; each
// streaming card has its own lock, and its idle-finish timer runs on a
// goroutine of the time package. A connection has three goroutines — the
// reader, a pinger and one worker that hands events to the Inbox in order —
// and Run waits for them, and for the reactions it started, before it
// returns.
package feishu

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

// Config is channels.feishu.
type Config struct {
	configs.ChannelCommon
	// AppID is the app's App ID (cli_…), from the developer console's
	// Credentials & Basic Info page.
	AppID string `json:"appId"`
	// AppSecret is the app's App Secret from the same page.
	AppSecret string `json:"appSecret"`
	// EncryptKey decrypts events the platform encrypted (Events and
	// callbacks > Encryption strategy); empty when encryption is off.
	EncryptKey string `json:"encryptKey"`
	// VerificationToken, when set, drops events whose header carries
	// another token.
	VerificationToken string `json:"verificationToken"`
	// GroupConfig: "mention" (default) answers in groups only when the
	// bot is @mentioned; the allowlist lists chat ids ("oc_...").
	channels.GroupConfig
	// Domain is "feishu" (default, open.feishu.cn) or "lark"
	// (open.larksuite.com, the international edition).
	Domain string `json:"domain"`
	// TopicIsolation makes each topic of a topic group (and each thread)
	// its own conversation (default true).
	TopicIsolation bool `json:"topicIsolation"`
	// ReactEmoji is the reaction put on a user's message once the gateway
	// took it (default "THUMBSUP"; "" for none).
	ReactEmoji string `json:"reactEmoji"`
	// Streaming streams replies into a CardKit card (default true); off,
	// replies are plain post messages sent when complete.
	Streaming bool `json:"streaming"`
	// APIBase replaces the domain's base URL (tests, proxies).
	APIBase string `json:"apiBase"`
	// MaxMediaBytes caps one downloaded attachment (default 20 MB).
	MaxMediaBytes int64 `json:"maxMediaBytes"`
}

// Domains and their API bases.
const (
	DomainFeishu = "feishu"
	DomainLark   = "lark"
	BaseFeishu   = "https://open.feishu.cn"
	BaseLark     = "https://open.larksuite.com"
)

// DefaultConfig is disabled, with the defaults of every option.
func DefaultConfig() Config {
	return Config{
		GroupConfig: channels.GroupConfig{GroupPolicy: channels.GroupMention}, Domain: DomainFeishu, TopicIsolation: true,
		ReactEmoji: "THUMBSUP", Streaming: true, MaxMediaBytes: 20 << 20,
	}
}

// Validate checks the config; errors name the key under channels.feishu.
func (c Config) Validate() error {
	var p channels.Problems
	p.Required(c.AppID, "appId is required (developer console > your app > Credentials & Basic Info)")
	p.Required(c.AppSecret, "appSecret is required (developer console > your app > Credentials & Basic Info)")
	p.Add(c.GroupConfig.Check())
	p.OneOf("domain", c.Domain, DomainFeishu, DomainLark)
	if c.APIBase != "" {
		p.URL("apiBase", c.APIBase)
	}
	if strings.ContainsAny(c.ReactEmoji, " /?#") {
		p.Addf("reactEmoji: %q is not an emoji type such as THUMBSUP", c.ReactEmoji)
	}
	p.NonNegative("maxMediaBytes", c.MaxMediaBytes)
	return p.Err()
}

// base is the API root the channel talks to.
func (c Config) base() string {
	if c.APIBase != "" {
		return strings.TrimRight(c.APIBase, "/")
	}
	if c.Domain == DomainLark {
		return BaseLark
	}
	return BaseFeishu
}

// Factory registers the channel: registry.Register("feishu", feishu.Factory()).
// With streaming off it reports no Edit capability (see Capabilities).
func Factory() channels.Factory {
	return channels.NewFactory("feishu", DefaultConfig, New)
}

// Channel is the Feishu adapter. It streams replies as CardKit cards; see
// Plain for the variant without edits.
type Channel struct {
	cfg      Config
	log      *slog.Logger
	redact   *redact.Redactor
	api      *kit.Client // authenticated REST calls
	open     *kit.Client // token and endpoint calls (no token)
	tokens   *kit.TokenCache
	dedup    *kit.Dedup
	files    *http.Client
	tr       *http.Transport // idle connections are closed when Run ends
	mediaDir string
	health   channels.HealthState

	// Timing, fixed by New; tests in this package shorten them.
	editInterval time.Duration
	finishIdle   time.Duration // a streaming card without edits this long is finished
	backoffMin   time.Duration
	backoffMax   time.Duration
	fragmentTTL  time.Duration

	mu    sync.Mutex
	botID string           // the bot's open_id
	cards map[string]*card // streaming cards by message id
	bg    sync.WaitGroup   // reactions and card finishing in flight
}

var (
	_ channels.Channel        = (*Channel)(nil)
	_ channels.Editor         = (*Channel)(nil)
	_ channels.Finisher       = (*Channel)(nil)
	_ channels.Limiter        = (*Channel)(nil)
	_ channels.MediaSender    = (*Channel)(nil)
	_ channels.HealthReporter = (*Channel)(nil)
)

// New builds the channel. It does no IO: Run connects.
func New(cfg Config, deps channels.Deps) (*Channel, error) {
	// An empty reactEmoji turns the reaction off.
	channels.FillDefaults(&cfg, DefaultConfig(), "ReactEmoji")
	cfg.Domain = strings.ToLower(strings.TrimSpace(cfg.Domain))
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	red := deps.Redactor(cfg.AppSecret, cfg.EncryptKey, cfg.VerificationToken)
	c := &Channel{
		cfg:          cfg,
		log:          deps.Logger(),
		redact:       red,
		mediaDir:     deps.MediaDir("feishu"),
		dedup:        kit.NewDedup(0),
		tr:           http.DefaultTransport.(*http.Transport).Clone(),
		editInterval: 500 * time.Millisecond,
		finishIdle:   10 * time.Second,
		backoffMin:   time.Second,
		backoffMax:   time.Minute,
		fragmentTTL:  10 * time.Second,
		cards:        map[string]*card{},
	}
	c.files = &http.Client{Transport: c.tr, Timeout: 2 * time.Minute}
	rest := &http.Client{Transport: c.tr, Timeout: 30 * time.Second}
	check := kit.Envelope("code", "msg")
	c.open = &kit.Client{Base: cfg.base(), HTTP: rest, Check: check, Redact: red}
	c.tokens = kit.NewTokenCache(c.fetchToken)
	c.api = &kit.Client{Base: cfg.base(), HTTP: rest, Check: check, Redact: red, Auth: c.tokens.Header("Authorization", "Bearer ")}
	return c, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "feishu" }

// MessageLimit implements channels.Limiter. Feishu takes 150 KB per text
// message but 30 KB per card; 6,000 characters stay under the card limit
// even in four-byte characters.
func (c *Channel) MessageLimit() int { return 6000 }

// EditInterval implements channels.Editor: CardKit allows 10 updates per
// second per card; half a second keeps the typing effect smooth.
func (c *Channel) EditInterval() time.Duration { return c.editInterval }

// Health implements channels.HealthReporter.
func (c *Channel) Health() channels.Health { return c.health.Get() }

func (c *Channel) self() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.botID
}

var _ channels.CapabilityReporter = (*Channel)(nil)

// Capabilities implements channels.CapabilityReporter: with streaming off
// the dispatcher does not edit, and sends each reply once, complete, as a
// post message.
func (c *Channel) Capabilities() channels.Capabilities {
	return channels.Capabilities{Edit: c.cfg.Streaming}
}
