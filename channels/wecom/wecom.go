// Package wecom is the WeCom (企业微信) AI bot channel (智能机器人, long
// connection mode): one websocket per bot to wss://openws.work.weixin.qq.com,
// so no public callback URL is needed.
//
// Frames are JSON {cmd, headers:{req_id}, body}. The channel subscribes
// with the bot id and secret (aibot_subscribe), pings every 30 s and counts
// the connection dead after two pings without an answer. Messages arrive as
// aibot_msg_callback; events (entering a chat, another connection taking
// over) as aibot_event_callback. WeCom does not ask for acknowledgements of
// either.
//
// Replies answer the message's req_id (aibot_respond_msg) as a native
// streaming message: the first text opens a stream, edits replace its
// content (the whole text so far) and the end of the reply finishes it.
// Frames for one req_id are sent one at a time, each after WeCom's answer
// to the previous one. A message that answers nothing (cron, a second
// reply, a req_id older than WeCom keeps it) is pushed with aibot_send_msg
// as Markdown instead, and cannot be edited.
//
// Media in: images, files and videos are downloaded from their URL and
// decrypted (AES-256-CBC, the key from the message's aeskey, the IV its
// first 16 bytes, PKCS#7 padding to 32 bytes). Voice messages arrive
// already transcribed.
//
// Concurrency: Send, Edit and Finish may be called from any goroutine,
// concurrently with Run and with each other. They take the live connection,
// which Run publishes under a lock (and fail, retryably, while there is
// none); writes to it are serialized, and each stream has a lock of its own
// so that its frames go one at a time. Each connection has a reader
// goroutine that hands WeCom's answers to the calls waiting for them and
// every other frame to Run's goroutine, which handles them in order; welcome
// messages go on short goroutines bounded by the connection's context.
package wecom

import (
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

// Config is channels.wecom.
type Config struct {
	configs.ChannelCommon
	// BotID is the AI bot's Bot ID (WeCom admin console > 智能机器人 > API
	// mode with a long connection).
	BotID string `json:"botId"`
	// Secret is the bot's Secret from the same page.
	Secret string `json:"secret"`
	// WelcomeMessage, when set, greets a user who opens a chat with the bot.
	WelcomeMessage string `json:"welcomeMessage"`
	// WSURL replaces wss://openws.work.weixin.qq.com (tests, proxies).
	WSURL string `json:"wsUrl"`
	// MaxMediaBytes caps one attachment downloaded for the agent (20 MB).
	MaxMediaBytes int64 `json:"maxMediaBytes"`
}

// DefaultWSURL is WeCom's long-connection endpoint.
const DefaultWSURL = "wss://openws.work.weixin.qq.com"

// DefaultConfig is disabled, with the defaults of every option.
func DefaultConfig() Config { return Config{WSURL: DefaultWSURL, MaxMediaBytes: 20 << 20} }

// Validate checks the config; errors name the key under channels.wecom and
// never contain the secret.
func (c Config) Validate() error {
	var p channels.Problems
	p.Required(c.BotID, "botId is required (admin console > 智能机器人 > your bot > Bot ID)")
	p.Required(c.Secret, "secret is required (same page, Secret)")
	p.URL("wsUrl", c.WSURL, "ws", "wss")
	p.NonNegative("maxMediaBytes", c.MaxMediaBytes)
	return p.Err()
}

// Factory registers the channel: registry.Register("wecom", wecom.Factory()).
func Factory() channels.Factory {
	return channels.NewFactory("wecom", DefaultConfig, New)
}

// Channel is the WeCom adapter.
type Channel struct {
	cfg      Config
	log      *slog.Logger
	redact   *redact.Redactor
	http     *http.Client
	mediaDir string
	dedup    *kit.Dedup
	health   channels.HealthState

	// Timing, fixed by New; tests in this package shorten them.
	backoffMin, backoffMax time.Duration
	heartbeat              time.Duration
	ackTimeout             time.Duration

	mu      sync.Mutex
	conn    *conn                  // the live connection, nil between connections
	replies map[string]*replyState // chat id -> the message a reply answers
	streams map[string]*stream     // stream id -> state
}

var (
	_ channels.Channel        = (*Channel)(nil)
	_ channels.Editor         = (*Channel)(nil)
	_ channels.Finisher       = (*Channel)(nil)
	_ channels.Limiter        = (*Channel)(nil)
	_ channels.HealthReporter = (*Channel)(nil)
)

// New builds the channel. It does no IO: Run connects.
func New(cfg Config, deps channels.Deps) (*Channel, error) {
	channels.FillDefaults(&cfg, DefaultConfig())
	cfg.BotID, cfg.Secret = strings.TrimSpace(cfg.BotID), strings.TrimSpace(cfg.Secret)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Channel{
		cfg: cfg, log: deps.Logger(), mediaDir: deps.MediaDir("wecom"), redact: deps.Redactor(cfg.Secret), http: &http.Client{Timeout: 2 * time.Minute},
		dedup: kit.NewDedup(0), backoffMin: time.Second, backoffMax: time.Minute,
		heartbeat: 30 * time.Second, ackTimeout: 5 * time.Second,
		replies: map[string]*replyState{}, streams: map[string]*stream{},
	}
	return c, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "wecom" }

// MessageLimit implements channels.Limiter: a stream carries at most 20480
// bytes; 6000 characters of Chinese text stay under it.
func (c *Channel) MessageLimit() int { return 6000 }

// EditInterval implements channels.Editor.
func (c *Channel) EditInterval() time.Duration { return time.Second }

// Health implements channels.HealthReporter.
func (c *Channel) Health() channels.Health { return c.health.Get() }

// live returns the current connection.
func (c *Channel) live() (*conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil, errors.New("wecom: not connected")
	}
	return c.conn, nil
}
