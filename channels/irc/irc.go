// Package irc is the IRC channel: the bot is an ordinary IRC client that
// talks to users in private messages and in the channels it joins, over TLS
// (default) or plain TCP.
//
// The client is our own, small, over github.com/ergochat/irc-go's ircmsg
// (line parsing and serialising, IRCv3 tags) and ircreader (bounded line
// reading). A full client library (irc-go's ircevent) was not used because it
// reconnects, renames and floods on its own terms: here channels.Loop owns
// reconnecting (backoff, jitter, health), a rejected SASL login must stop the
// channel (channels.Fatal) instead of being retried, and every line the bot
// sends goes through one token bucket.
//
// Connecting: CAP LS 302 (requesting sasl when configured, account-tag and
// message-tags when offered), PASS, NICK, USER; SASL PLAIN; a nick in use
// (433) is retried as nick_, nick__, nick2, … and the configured nick is
// asked back every regain interval; after the welcome (001) the bot
// identifies to NickServ when configured and joins its channels. It answers
// PING and pings the server itself when the line goes quiet, so a dead
// connection is noticed.
//
// Receiving: PRIVMSG to the bot's nick is a direct chat (ChatID is the
// sender's nick); PRIVMSG to a channel is a group message that passes the
// group policy (by default only when it names the bot: "nick: …", "nick, …"
// or the nick as a word). CTCP is ignored, except VERSION, which is answered
// when a flood token is free. IRC has no message ids: MessageID is the
// server's msgid tag when it sends one (IRCv3 message-tags), else empty, and
// nothing is redelivered.
//
// Sending: text is cut into lines at newlines and at the 512-byte line limit
// (counting the ":nick!user@host PRIVMSG target :" prefix the server adds
// when relaying, with room for the longest user and host), on UTF-8
// boundaries, preferring spaces. Every line waits for a token of the flood
// bucket (burst 4, one line per 2 s by default). IRC has no edits, so the
// channel is no Editor: a streamed reply is sent once, complete.
//
// Concurrency: Run is called by one goroutine at a time; Send may be called
// concurrently with everything (one caller per chat) and fails while no
// connection is registered, which the dispatcher retries.
package irc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/redact"
)

// Config is channels.irc.
type Config struct {
	configs.ChannelCommon
	// Server is the IRC server's host name or address.
	Server string `json:"server"`
	// Port is the server's port (default 6697 with TLS, 6667 without).
	Port int `json:"port"`
	// TLS connects over TLS (default true).
	TLS bool `json:"tls"`
	// TLSInsecureSkipVerify accepts any server certificate (self-signed
	// test servers only; default false).
	TLSInsecureSkipVerify bool `json:"tlsInsecureSkipVerify"`
	// Nick is the bot's nick name.
	Nick string `json:"nick"`
	// User is the user name (ident) sent with USER (default: the nick).
	User string `json:"user"`
	// Realname is the "real name" shown in WHOIS (default "nanobot").
	Realname string `json:"realname"`
	// Password is the server password (PASS), if the server needs one.
	Password string `json:"password"`
	// SASL logs in to the bot's services account with SASL PLAIN during
	// connecting; a rejected login stops the channel.
	SASL SASLConfig `json:"sasl"`
	// NickservPassword identifies to NickServ after connecting
	// ("IDENTIFY <nick> <password>"), for networks without SASL.
	NickservPassword string `json:"nickservPassword"`
	// Channels are joined after connecting.
	Channels []ChannelConfig `json:"channels"`
	// GroupConfig: "mention" (default) answers in channels only messages
	// that name the bot; the allowlist lists channel names. Private
	// messages are always answered.
	channels.GroupConfig
	// FloodBurst is how many lines may be sent back to back (default 4).
	FloodBurst int `json:"floodBurst"`
	// FloodIntervalMs is the time per line once the burst is spent
	// (default 2000).
	FloodIntervalMs int `json:"floodIntervalMs"`
}

// SASLConfig is channels.irc.sasl.
type SASLConfig struct {
	// User is the services account name.
	User string `json:"user"`
	// Password is the account's password.
	Password string `json:"password"`
}

// ChannelConfig is one entry of channels.irc.channels.
type ChannelConfig struct {
	// Name is the channel, with its prefix ("#nanobot").
	Name string `json:"name"`
	// Key is the channel key (mode +k), if it has one.
	Key string `json:"key,omitempty"`
}

// Defaults.
const (
	DefaultRealname        = "nanobot"
	DefaultFloodBurst      = 4
	DefaultFloodIntervalMs = 2000
)

// DefaultConfig is disabled, with the defaults of every option.
func DefaultConfig() Config {
	return Config{
		TLS: true, Realname: DefaultRealname, GroupConfig: channels.GroupConfig{GroupPolicy: channels.GroupMention},
		FloodBurst: DefaultFloodBurst, FloodIntervalMs: DefaultFloodIntervalMs,
	}
}

// Validate checks the config; errors name the key under channels.irc.
func (c Config) Validate() error {
	var p channels.Problems
	if strings.TrimSpace(c.Server) == "" {
		p.Addf("server: required (the IRC server's host name, e.g. irc.libera.chat)")
	} else if strings.ContainsAny(c.Server, " /:") && net.ParseIP(c.Server) == nil {
		p.Addf("server: %q is not a host name (give the port in port, without a scheme)", c.Server)
	}
	if c.Port < 0 || c.Port > 65535 {
		p.Addf("port: %d is not a TCP port", c.Port)
	}
	if err := checkNick(c.Nick); err != nil {
		p.Addf("nick: %w", err)
	}
	if strings.ContainsAny(c.User, " \r\n\x00@") {
		p.Addf("user: must not contain spaces, line breaks or @")
	}
	for key, v := range map[string]string{"password": c.Password, "nickservPassword": c.NickservPassword} {
		if strings.ContainsAny(v, " \r\n\x00") {
			p.Addf("%s: must not contain spaces or line breaks", key)
		}
	}
	if strings.ContainsAny(c.Realname, "\r\n\x00") {
		p.Addf("realname: must not contain line breaks")
	}
	if (c.SASL.User == "") != (c.SASL.Password == "") {
		p.Addf("sasl: give both user and password, or neither")
	}
	for i, ch := range c.Channels {
		if err := checkChannelName(ch.Name); err != nil {
			p.Addf("channels[%d].name: %w", i, err)
		}
		if strings.ContainsAny(ch.Key, " ,\r\n\x00") {
			p.Addf("channels[%d].key: must not contain spaces, commas or line breaks", i)
		}
	}
	p.Add(c.GroupConfig.Check())
	if c.FloodBurst < 1 {
		p.Addf("floodBurst: %d, want at least 1", c.FloodBurst)
	}
	if c.FloodIntervalMs < 0 {
		p.Addf("floodIntervalMs: %d must not be negative", c.FloodIntervalMs)
	}
	return p.Err()
}

// checkNick accepts what RFC 2812 allows in a nick (letters, digits and
// []\`_^{|}-, not starting with a digit or -).
func checkNick(nick string) error {
	if nick == "" {
		return errors.New("required")
	}
	for i, r := range nick {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', strings.ContainsRune("[]\\`_^{|}", r):
		case (r >= '0' && r <= '9') || r == '-':
			if i == 0 {
				return fmt.Errorf("%q must not start with a digit or -", nick)
			}
		default:
			return fmt.Errorf("%q: %q is not allowed in a nick", nick, r)
		}
	}
	return nil
}

func checkChannelName(name string) error {
	if name == "" || !strings.ContainsRune("#&+!", rune(name[0])) {
		return fmt.Errorf("%q must start with #, &, + or !", name)
	}
	if strings.ContainsAny(name, " ,\a\r\n\x00") {
		return fmt.Errorf("%q must not contain spaces, commas or control characters", name)
	}
	return nil
}

// Factory registers the channel: registry.Register("irc", irc.Factory()).
func Factory() channels.Factory {
	return channels.NewFactory("irc", DefaultConfig, New)
}

// Channel is the IRC adapter.
type Channel struct {
	cfg    Config
	log    *slog.Logger
	redact *redact.Redactor
	flood  *bucket
	tls    *tls.Config // nil: plain TCP

	// Timing, fixed by New; tests in this package shorten them.
	backoffMin, backoffMax time.Duration
	dialTimeout            time.Duration
	registerTimeout        time.Duration
	idle                   time.Duration // quiet this long: ping the server
	regain                 time.Duration // how often to ask for the configured nick back

	// written counts the PRIVMSG lines Send wrote (tests wait for them to
	// arrive).
	written atomic.Int64

	// events carries received messages from the connection's reader to
	// Run's worker, in order.
	events chan event

	mu     sync.Mutex
	health channels.HealthState
	cur    *conn // the registered connection; nil while there is none
}

var (
	_ channels.Channel        = (*Channel)(nil)
	_ channels.Limiter        = (*Channel)(nil)
	_ channels.HealthReporter = (*Channel)(nil)
)

// New builds the channel. It does no IO: Run connects.
func New(cfg Config, deps channels.Deps) (*Channel, error) {
	// A floodIntervalMs of 0 sends the lines past the burst without a pause.
	channels.FillDefaults(&cfg, DefaultConfig(), "FloodIntervalMs")
	if cfg.User == "" {
		cfg.User = cfg.Nick
	}
	if cfg.Port == 0 {
		cfg.Port = 6667
		if cfg.TLS {
			cfg.Port = 6697
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Channel{
		cfg:             cfg,
		log:             deps.Logger(),
		redact:          deps.Redactor(cfg.Password, cfg.SASL.Password, cfg.NickservPassword, saslBlob(cfg.SASL)),
		flood:           newBucket(cfg.FloodBurst, time.Duration(cfg.FloodIntervalMs)*time.Millisecond),
		backoffMin:      time.Second,
		backoffMax:      2 * time.Minute,
		dialTimeout:     30 * time.Second,
		registerTimeout: time.Minute,
		idle:            2 * time.Minute,
		regain:          time.Minute,
		events:          make(chan event, 256),
	}
	if cfg.TLS {
		c.tls = &tls.Config{ServerName: cfg.Server, InsecureSkipVerify: cfg.TLSInsecureSkipVerify, MinVersion: tls.VersionTLS12}
	}
	return c, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "irc" }

// MessageLimit implements channels.Limiter. IRC lines are much shorter
// (Send cuts them); the dispatcher's parts are kept to a few lines so that
// a connection lost in the middle of a part loses little.
func (c *Channel) MessageLimit() int { return 1500 }

// Health implements channels.HealthReporter.
func (c *Channel) Health() channels.Health { return c.health.Get() }

func (c *Channel) addr() string {
	return net.JoinHostPort(c.cfg.Server, strconv.Itoa(c.cfg.Port))
}

func (c *Channel) current() *conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}

func (c *Channel) setCurrent(cn *conn) {
	c.mu.Lock()
	c.cur = cn
	c.mu.Unlock()
}

// Run connects, handles messages until ctx ends, and returns nil then.
// Reconnecting is a channels.Loop's; a rejected SASL login, a rejected
// server password or a ban ends it with a channels.FatalError.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	stop := channels.Work(ctx, c.events, func(ctx context.Context, e event) { c.handle(ctx, in, e) })
	loop := &channels.Loop{
		Name: "irc", Log: c.log, Health: &c.health, Min: c.backoffMin, Max: c.backoffMax,
		Redact: c.redact.Error,
	}
	err := loop.Run(ctx, c.session)
	stop()
	return err
}

// deliver hands m to the inbox, retrying a few times on failures other
// than a denial. IRC acknowledges nothing and keeps no history to fetch
// again: a message the gateway did not take is lost, and reported so.
func (c *Channel) deliver(ctx context.Context, in channels.Inbox, m bus.Inbound) {
	if err := channels.DeliverRetrying(ctx, in, m, c.log, c.backoffMin, c.backoffMax); err != nil && !errors.Is(err, channels.ErrDenied) {
		channels.ReportLost(in, m, err, c.log)
	}
}
