// Package xmpp is the XMPP (Jabber) channel: a client connection on
// mellium.im/xmpp that logs in with SASL SCRAM-SHA-256 / SCRAM-SHA-1 (PLAIN
// only inside TLS: the library never authenticates over a plain
// connection), over StartTLS or direct TLS, answers 1:1 chats (type chat)
// and joins multi-user chat rooms (XEP-0045) with a nick. Room messages
// pass the group policy (mention by nick by default); the bot's own echoes
// and the history a room replays on join are ignored. Streaming replies are
// one message plus Last Message Corrections (XEP-0308), typing is a chat
// state (XEP-0085), and file links (XEP-0066 out-of-band data) reach the
// agent as text.
//
// Concurrency: Run owns the connection and reconnects through a
// channels.Loop. Send, Edit and Typing may be called from any goroutine,
// also while Run reconnects: they write to the current session under its
// own lock, or fail with an error the dispatcher retries when there is
// none. The stream is read by one goroutine per session, which never
// blocks on the gateway: it queues messages for Run's delivery goroutine.
//
// Not supported: stream management (XEP-0198; mellium has none, so a
// message the server relayed just before a connection broke can be lost),
// file upload and download (XEP-0363), OMEMO encryption, MUC private
// messages.
package xmpp

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"mellium.im/xmpp"
	"mellium.im/xmpp/jid"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/redact"
)

// Config is channels.xmpp.
type Config struct {
	configs.ChannelCommon
	// JID is the bot's account, "bot@example.org".
	JID string `json:"jid"`
	// Password of the account.
	Password string `json:"password"`
	// Server overrides where to connect, "host:port" (default: the JID's
	// domain, through its _xmpp-client SRV record, port 5222).
	Server string `json:"server"`
	// DirectTLS speaks TLS from the first byte (XEP-0368, usually port
	// 5223) instead of StartTLS.
	DirectTLS bool `json:"directTLS"`
	// CAFile is a PEM file of certificate authorities to trust besides the
	// system's (a self-signed server).
	CAFile string `json:"caFile"`
	// TLSInsecureSkipVerify accepts any server certificate. Only for
	// testing: anyone on the path can then read the password.
	TLSInsecureSkipVerify bool `json:"tlsInsecureSkipVerify"`
	// Resource is the resource the bot asks for (default "nanobot"); the
	// server may assign another (Prosody does).
	Resource string `json:"resource"`
	// Rooms are the multi-user chats the bot joins.
	Rooms []Room `json:"rooms"`
	// GroupConfig decides which room messages are answered: "mention"
	// (default) those that name the bot's nick; the allowlist lists room
	// JIDs.
	channels.GroupConfig
	// Corrections streams replies as one message plus corrections
	// (XEP-0308); off, a reply is sent once it is complete (default true).
	Corrections *bool `json:"corrections"`
	// ChatStates sends "composing" while the bot works (XEP-0085, default
	// true).
	ChatStates *bool `json:"chatStates"`
}

// Room is one multi-user chat to join.
type Room struct {
	// JID is the room's address, "room@conference.example.org".
	JID string `json:"jid"`
	// Nick is the bot's nickname in the room (default: the JID's
	// localpart).
	Nick string `json:"nick"`
	// Password of a password-protected room.
	Password string `json:"password"`
}

// DefaultConfig is disabled, with the defaults of every option.
func DefaultConfig() Config {
	return Config{GroupConfig: channels.GroupConfig{GroupPolicy: channels.GroupMention}, Resource: "nanobot"}
}

func (c Config) corrections() bool { return c.Corrections == nil || *c.Corrections }
func (c Config) chatStates() bool  { return c.ChatStates == nil || *c.ChatStates }

// Validate checks the config; errors name the key under channels.xmpp.
func (c Config) Validate() error {
	var errs []error
	if j, err := jid.Parse(c.JID); err != nil || j.Localpart() == "" {
		errs = append(errs, fmt.Errorf(`jid: %q is not an account JID ("bot@example.org")`, c.JID))
	}
	if c.Password == "" {
		errs = append(errs, errors.New("password: required"))
	}
	if c.Server != "" {
		if _, port, err := net.SplitHostPort(c.Server); err != nil || port == "" {
			errs = append(errs, fmt.Errorf(`server: %q is not "host:port"`, c.Server))
		}
	}
	if c.CAFile != "" {
		if _, err := loadCAs(c.CAFile); err != nil {
			errs = append(errs, fmt.Errorf("caFile: %w", err))
		}
	}
	if _, err := jid.New("x", "example.org", c.Resource); c.Resource != "" && err != nil {
		errs = append(errs, fmt.Errorf("resource: %q: %w", c.Resource, err))
	}
	seen := map[string]bool{}
	for i, r := range c.Rooms {
		j, err := jid.Parse(r.JID)
		if err != nil || j.Localpart() == "" || j.Resourcepart() != "" {
			errs = append(errs, fmt.Errorf(`rooms[%d].jid: %q is not a room JID ("room@conference.example.org")`, i, r.JID))
			continue
		}
		if seen[j.String()] {
			errs = append(errs, fmt.Errorf("rooms[%d].jid: %s is listed twice", i, j))
		}
		seen[j.String()] = true
		if r.Nick != "" {
			if _, err := j.WithResource(r.Nick); err != nil {
				errs = append(errs, fmt.Errorf("rooms[%d].nick: %q: %w", i, r.Nick, err))
			}
		}
	}
	errs = append(errs, c.GroupConfig.Check())
	return errors.Join(errs...)
}

// loadCAs reads a PEM bundle into the system pool (or a new one).
func loadCAs(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

// Factory registers the channel: registry.Register("xmpp", xmpp.Factory()).
func Factory() channels.Factory {
	return channels.NewFactory("xmpp", DefaultConfig, New)
}

// room is a configured room with its parsed addresses.
type room struct {
	addr     jid.JID // bare room JID
	occupant jid.JID // room/nick: the bot in the room
	nick     string
	password string
}

// Channel is the XMPP adapter.
type Channel struct {
	cfg    Config
	log    *slog.Logger
	me     jid.JID // bare account JID
	origin jid.JID // with the resource
	tls    *tls.Config
	rooms  map[string]*room // by bare room JID
	redact *redact.Redactor

	// Timing, fixed by New; tests in this package shorten them.
	editInterval time.Duration
	backoffMin   time.Duration
	backoffMax   time.Duration
	joinTimeout  time.Duration

	health channels.HealthState

	mu   sync.Mutex
	sess *xmpp.Session // nil while disconnected
	// occupants maps room -> nick -> the occupant's real bare JID, where
	// the room tells (non-anonymous rooms, or the bot is a moderator).
	occupants map[string]map[string]string
	joins     map[string]chan error // rooms being joined -> outcome
}

var (
	_ channels.Channel            = (*Channel)(nil)
	_ channels.Editor             = (*Channel)(nil)
	_ channels.Limiter            = (*Channel)(nil)
	_ channels.Typer              = (*Channel)(nil)
	_ channels.HealthReporter     = (*Channel)(nil)
	_ channels.CapabilityReporter = (*Channel)(nil)
)

// New builds the channel. It does no network IO: Run connects.
func New(cfg Config, deps channels.Deps) (*Channel, error) {
	channels.FillDefaults(&cfg, DefaultConfig())
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	me := jid.MustParse(cfg.JID).Bare()
	origin, err := me.WithResource(cfg.Resource)
	if err != nil {
		return nil, fmt.Errorf("resource: %w", err)
	}
	tc := &tls.Config{ServerName: me.Domainpart(), MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.TLSInsecureSkipVerify} // #nosec G402 -- opt-in for tests, documented
	if cfg.CAFile != "" {
		if tc.RootCAs, err = loadCAs(cfg.CAFile); err != nil {
			return nil, fmt.Errorf("caFile: %w", err)
		}
	}
	log := deps.Logger()
	secrets := []string{cfg.Password}
	for _, r := range cfg.Rooms {
		if r.Password != "" {
			secrets = append(secrets, r.Password)
		}
	}
	c := &Channel{
		cfg: cfg, log: log, me: me, origin: origin, tls: tc,
		rooms: map[string]*room{}, redact: deps.Redactor(secrets...),
		editInterval: time.Second, backoffMin: time.Second, backoffMax: time.Minute,
		joinTimeout: 30 * time.Second,
		occupants:   map[string]map[string]string{}, joins: map[string]chan error{},
	}
	for _, r := range cfg.Rooms {
		addr := jid.MustParse(r.JID).Bare()
		nick := r.Nick
		if nick == "" {
			nick = me.Localpart()
		}
		occ, err := addr.WithResource(nick)
		if err != nil {
			return nil, fmt.Errorf("rooms: nick %q: %w", nick, err)
		}
		c.rooms[addr.String()] = &room{addr: addr, occupant: occ, nick: nick, password: r.Password}
	}
	if cfg.TLSInsecureSkipVerify {
		log.Warn("xmpp: tlsInsecureSkipVerify is on: the server certificate is not checked; use caFile instead")
	}
	return c, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "xmpp" }

// MessageLimit implements channels.Limiter. Servers cap a stanza (Prosody
// at 256 KiB by default, some at 64 KiB); replies are split well below.
func (c *Channel) MessageLimit() int { return 8000 }

// EditInterval implements channels.Editor: one correction a second at most.
func (c *Channel) EditInterval() time.Duration { return c.editInterval }

// Capabilities implements channels.CapabilityReporter: corrections can be
// switched off for clients that show each one as a new message.
func (c *Channel) Capabilities() channels.Capabilities {
	return channels.Capabilities{Edit: c.cfg.corrections()}
}

// Health implements channels.HealthReporter.
func (c *Channel) Health() channels.Health { return c.health.Get() }

// room returns the configured room j (any resource) is in, or nil.
func (c *Channel) room(j jid.JID) *room { return c.rooms[j.Bare().String()] }

// session returns the live session, or nil.
func (c *Channel) session() *xmpp.Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess
}
