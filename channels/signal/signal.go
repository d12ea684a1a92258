// Package signal is the Signal channel. Signal has no bot API: the channel
// talks to a signal-cli daemon (github.com/AsamK/signal-cli) that is
// registered or linked as the bot's phone number and runs next to the
// gateway, through signal-cli's JSON-RPC interface (signal-cli-jsonrpc(5)).
//
// Two transports, chosen by config:
//
//   - HTTP (`daemon --http`, the default): requests are single JSON-RPC
//     calls POSTed to /api/v1/rpc; incoming messages are the `receive`
//     events of the Server-Sent Events stream GET /api/v1/events. The
//     channel always sends Last-Event-ID, so signal-cli replays what came
//     in while the channel was away (it keeps the last 1000 events): the
//     id of the last event handled, kept in the state folder across
//     restarts, or, on the very first start, an id signal-cli does not
//     know, which replays everything it kept; of that first replay only
//     messages sent after the channel started are taken. It reconnects
//     when the stream stays silent for three of signal-cli's 15 s
//     keep-alives.
//   - TCP (`daemon --tcp`): one socket carrying newline-delimited JSON-RPC
//     both ways; requests wait for the response with their id, `receive`
//     notifications arrive in between. Requests fail while the socket is
//     down (the dispatcher retries them). signal-cli does not replay
//     notifications on a socket: what arrives while it is down is lost,
//     which is why HTTP is the default.
//
// A message is delivered to the gateway before the next event is read. If
// the gateway cannot take it, the HTTP session ends without advancing its
// Last-Event-ID, so the event is read again after the reconnect.
//
// Chats: a direct chat's id is the other side's phone number (its UUID
// when the number is hidden); a group's is "group:" + the group id. The
// sender id is "number|uuid", so allowFrom may list either. Group messages
// are passed on under groupPolicy: "mention" (the default) takes messages
// that @mention the bot's account or quote one of its messages.
//
// Outbound: text is sent as plain text (Signal renders no Markdown), files
// as data: URIs, so signal-cli needs no access to the gateway's disk.
// Typing is sendTyping. Signal messages cannot be edited through this
// channel (edits exist in newer signal-cli but are not used), so replies are
// not streamed.
//
// Concurrency: Send, SendMedia and Typing may be called from any goroutine
// at any time; over HTTP they need no live event stream, over TCP they need
// the socket and fail while it is down.
package signal

import (
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/kit"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/redact"
)

// Config is channels.signal.
type Config struct {
	configs.ChannelCommon
	// Account is the bot's phone number in international format
	// ("+4915112345678"), the one signal-cli is registered or linked as.
	Account string `json:"account"`
	// AccountUUID is the account's ACI (UUID), optional: mentions that
	// carry only a UUID are recognised by it.
	AccountUUID string `json:"accountUuid,omitempty"`
	// HTTPURL is the signal-cli daemon started with --http (default
	// http://127.0.0.1:8080). Ignored when TCPAddr is set.
	HTTPURL string `json:"httpUrl"`
	// TCPAddr, when set ("127.0.0.1:7583"), uses a daemon started with
	// --tcp instead of HTTP.
	TCPAddr string `json:"tcpAddr,omitempty"`
	// GroupConfig: "mention" (default) answers in groups only messages
	// that @mention the bot or quote it; the allowlist lists group ids
	// (base64, as signal-cli listGroups shows them).
	channels.GroupConfig
	// MaxMediaBytes caps one attachment taken in or sent (default 20 MB).
	MaxMediaBytes int64 `json:"maxMediaBytes"`
}

// DefaultHTTPURL is where `signal-cli daemon --http` listens by default.
const DefaultHTTPURL = "http://127.0.0.1:8080"

// DefaultConfig is disabled, with the defaults of every option.
func DefaultConfig() Config {
	return Config{HTTPURL: DefaultHTTPURL, GroupConfig: channels.GroupConfig{GroupPolicy: channels.GroupMention}, MaxMediaBytes: 20 << 20}
}

var e164 = regexp.MustCompile(`^\+[1-9][0-9]{5,14}$`)

// Validate checks the config; errors name the key under channels.signal.
func (c Config) Validate() error {
	var p channels.Problems
	p.Required(c.Account, "account is required: the phone number signal-cli is registered as, e.g. \"+4915112345678\"")
	if strings.TrimSpace(c.Account) != "" && !e164.MatchString(c.Account) {
		p.Addf("account: %s is not a phone number in international format (\"+\" and digits)", quote(c.Account))
	}
	if c.TCPAddr != "" {
		if _, _, err := net.SplitHostPort(c.TCPAddr); err != nil {
			p.Addf("tcpAddr: %s is not host:port", quote(c.TCPAddr))
		}
	} else {
		p.URL("httpUrl", c.HTTPURL)
	}
	p.Add(c.GroupConfig.Check())
	p.NonNegative("maxMediaBytes", c.MaxMediaBytes)
	return p.Err()
}

func quote(s string) string { return "\"" + s + "\"" }

// Factory registers the channel: registry.Register("signal", signal.Factory()).
func Factory() channels.Factory {
	return channels.NewFactory("signal", DefaultConfig, New)
}

// Channel is the Signal adapter.
type Channel struct {
	cfg      Config
	log      *slog.Logger
	redact   *redact.Redactor
	http     *http.Client // RPC calls
	stream   *http.Client // the event stream (no overall timeout)
	mediaDir string
	dedup    *kit.Dedup
	health   channels.HealthState

	// Timing, fixed by New; tests in this package shorten them.
	backoffMin, backoffMax time.Duration
	// idle is how long the event stream may stay silent before it counts
	// as dead (signal-cli writes a keep-alive every 15 s).
	idle time.Duration

	// cursorFile keeps the last SSE event id handled across restarts
	// ("" without a state folder).
	cursorFile string

	mu      sync.Mutex
	loaded  bool      // lastID was read from cursorFile
	lastID  string    // the last SSE event id handled
	since   time.Time // without a cursor: older messages are not taken
	tcpConn *rpcConn  // the live TCP connection, nil between connections
}

var (
	_ channels.Channel        = (*Channel)(nil)
	_ channels.Limiter        = (*Channel)(nil)
	_ channels.Typer          = (*Channel)(nil)
	_ channels.MediaSender    = (*Channel)(nil)
	_ channels.HealthReporter = (*Channel)(nil)
)

// New builds the channel. It does no IO: Run connects.
func New(cfg Config, deps channels.Deps) (*Channel, error) {
	cfg.Account, cfg.TCPAddr = strings.TrimSpace(cfg.Account), strings.TrimSpace(cfg.TCPAddr)
	cfg.HTTPURL = strings.TrimRight(strings.TrimSpace(cfg.HTTPURL), "/")
	channels.FillDefaults(&cfg, DefaultConfig())
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Channel{
		cfg: cfg, log: deps.Logger(), redact: deps.Redactor(), mediaDir: deps.MediaDir("signal"),
		http: &http.Client{Timeout: 2 * time.Minute}, stream: &http.Client{},
		dedup: kit.NewDedup(0), backoffMin: time.Second, backoffMax: time.Minute, idle: 45 * time.Second,
	}
	if deps.Paths.State != "" {
		c.cursorFile = filepath.Join(deps.Paths.State, "signal-events.cursor")
	}
	return c, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "signal" }

// MessageLimit implements channels.Limiter: Signal sends up to 2000
// characters as the message body (longer text becomes an attachment the
// recipient has to open).
func (c *Channel) MessageLimit() int { return 2000 }

// Health implements channels.HealthReporter.
func (c *Channel) Health() channels.Health { return c.health.Get() }
