// Package email is the Email channel: the bot reads a mailbox over IMAP and
// answers by SMTP, using github.com/emersion/go-imap/v2 (client),
// github.com/emersion/go-smtp and github.com/emersion/go-message.
//
// Nothing is read before the mailbox owner agreed: New refuses a config
// without consentGranted. Receiving (imap.go, inbound.go): one IMAP
// connection selects the mailbox, waits for new mail with IDLE when the
// server has it and polls every pollIntervalSeconds otherwise, and looks
// only at unseen mail from allowFrom senders (searched on the server, then
// checked exactly). A mail is marked seen (or moved to moveTo) only after
// the gateway's Inbox took it; mail it skips — other senders, the bot's own,
// auto-replies, bulk and list mail, mail failing the DKIM/SPF check — is
// left as it was. A dropped connection is reconnected with backoff and
// jitter; Health says connected or reconnecting.
//
// A conversation is one correspondent: the chat id is the sender's address
// (lowercased), so each sender has one session whatever the subject, and
// answers go back to that address (never to Reply-To or Cc). Sending
// (outbound.go) threads the answer under the mail it answers (In-Reply-To,
// References, "Re: " subject) and writes the Markdown reply as plain text
// plus an HTML alternative (format.go). Email cannot edit a sent message,
// so a streamed answer arrives as one mail.
package email

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/mail"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
)

// Config is channels.email. Key names are those of the Python nanobot, so
// an existing config keeps working.
type Config struct {
	configs.ChannelCommon
	// ConsentGranted must be true before the bot reads anyone's mail: set
	// it once the mailbox owner agreed. The channel refuses to start
	// without it.
	ConsentGranted bool `json:"consentGranted"`

	// IMAPHost and IMAPPort locate the IMAP server (port 993 by default).
	IMAPHost string `json:"imapHost"`
	IMAPPort int    `json:"imapPort"`
	// IMAPUsername and IMAPPassword log in (often the address and an app
	// password).
	IMAPUsername string `json:"imapUsername"`
	IMAPPassword string `json:"imapPassword"`
	// IMAPMailbox is the folder watched for new mail (default "INBOX").
	IMAPMailbox string `json:"imapMailbox"`
	// IMAPUseSSL connects with implicit TLS (port 993; default true). When
	// false the connection is upgraded with STARTTLS (port 143).
	IMAPUseSSL bool `json:"imapUseSsl"`

	// SMTPHost and SMTPPort locate the submission server (587 by default).
	SMTPHost string `json:"smtpHost"`
	SMTPPort int    `json:"smtpPort"`
	// SMTPUsername and SMTPPassword authenticate (AUTH PLAIN or LOGIN);
	// leave both empty for a relay that needs none.
	SMTPUsername string `json:"smtpUsername"`
	SMTPPassword string `json:"smtpPassword"`
	// SMTPUseTLS upgrades the connection with STARTTLS (port 587; default
	// true). SMTPUseSSL uses implicit TLS instead (port 465) and wins when
	// both are set.
	SMTPUseTLS bool `json:"smtpUseTls"`
	SMTPUseSSL bool `json:"smtpUseSsl"`
	// FromAddress is the bot's address on outgoing mail (default
	// smtpUsername, then imapUsername, when they are addresses).
	FromAddress string `json:"fromAddress"`
	// FromName is the display name on outgoing mail (default "nanobot").
	FromName string `json:"fromName"`

	// AutoReplyEnabled answers incoming mail (default true). When false
	// the bot still reads mail, but only mails people when the agent sends
	// a message on its own (metadata force_send, cron jobs, ...).
	AutoReplyEnabled bool `json:"autoReplyEnabled"`
	// PollIntervalSeconds is how often the mailbox is checked when the
	// server has no IDLE (default 30, at least 5).
	PollIntervalSeconds int `json:"pollIntervalSeconds"`
	// MarkSeen flags handled mail \Seen (default true).
	MarkSeen bool `json:"markSeen"`
	// MoveTo, when set, moves handled mail to this folder (it must exist).
	MoveTo string `json:"moveTo"`
	// PostAction and PostActionMoveMailbox are the Python nanobot's
	// spelling of MoveTo: postAction "move" moves to postActionMoveMailbox.
	PostAction            string `json:"postAction"`
	PostActionMoveMailbox string `json:"postActionMoveMailbox"`
	// MaxBodyChars caps the text handed to the agent (default 12000).
	MaxBodyChars int `json:"maxBodyChars"`
	// SubjectPrefix starts the subject of an answer (default "Re: "); it is
	// not added twice.
	SubjectPrefix string `json:"subjectPrefix"`
	// HTMLReplies adds an HTML rendering of the answer next to the plain
	// text (default true).
	HTMLReplies bool `json:"htmlReplies"`

	// VerifyDKIM and VerifySPF require the receiving server's
	// Authentication-Results header to say dkim=pass / spf=pass, so a
	// forged From cannot pass allowFrom (both default true).
	VerifyDKIM bool `json:"verifyDkim"`
	VerifySPF  bool `json:"verifySpf"`

	// AllowedAttachmentTypes turns attachments on: MIME types to save
	// ("application/pdf", "image/*", or "*" for all). Empty (default) saves
	// none; the agent is told they were there.
	AllowedAttachmentTypes []string `json:"allowedAttachmentTypes"`
	// MaxAttachmentSize caps one attachment in bytes (default 2000000),
	// in and out.
	MaxAttachmentSize int64 `json:"maxAttachmentSize"`
	// MaxAttachmentsPerEmail caps attachments per mail (default 5), in and
	// out.
	MaxAttachmentsPerEmail int `json:"maxAttachmentsPerEmail"`

	// AllowInsecure permits a connection without TLS, passwords in clear
	// text: for a test server on loopback only.
	AllowInsecure bool `json:"allowInsecure"`
}

// Defaults.
const (
	DefaultIMAPPort      = 993
	DefaultSMTPPort      = 587
	DefaultPollSeconds   = 30
	MinPollSeconds       = 5
	DefaultMaxBodyChars  = 12000
	DefaultSubjectPrefix = "Re: "
	DefaultMaxAttachment = 2_000_000
	DefaultMaxAttachN    = 5
)

// DefaultConfig is disabled, with the defaults of every option.
func DefaultConfig() Config {
	return Config{
		IMAPPort: DefaultIMAPPort, IMAPMailbox: "INBOX", IMAPUseSSL: true,
		SMTPPort: DefaultSMTPPort, SMTPUseTLS: true,
		AutoReplyEnabled: true, PollIntervalSeconds: DefaultPollSeconds, MarkSeen: true,
		MaxBodyChars: DefaultMaxBodyChars, SubjectPrefix: DefaultSubjectPrefix, HTMLReplies: true,
		VerifyDKIM: true, VerifySPF: true,
		MaxAttachmentSize: DefaultMaxAttachment, MaxAttachmentsPerEmail: DefaultMaxAttachN,
	}
}

// ErrNoConsent is returned by New while consentGranted is false.
var ErrNoConsent = errors.New("consentGranted: false — the bot reads no mail until the mailbox owner agreed; set channels.email.consentGranted to true once they have")

// Validate checks the config; errors name the key under channels.email.
func (c Config) Validate() error {
	if !c.ConsentGranted {
		return ErrNoConsent
	}
	var errs []error
	req := func(key, v string) {
		if strings.TrimSpace(v) == "" {
			errs = append(errs, fmt.Errorf("%s: required", key))
		}
	}
	req("imapHost", c.IMAPHost)
	req("imapUsername", c.IMAPUsername)
	req("imapPassword", c.IMAPPassword)
	req("smtpHost", c.SMTPHost)
	for key, p := range map[string]int{"imapPort": c.IMAPPort, "smtpPort": c.SMTPPort} {
		if p < 1 || p > 65535 {
			errs = append(errs, fmt.Errorf("%s: %d is not a port", key, p))
		}
	}
	if (c.SMTPUsername == "") != (c.SMTPPassword == "") {
		errs = append(errs, errors.New("smtpUsername, smtpPassword: set both or neither"))
	}
	if c.fromAddress() == "" {
		errs = append(errs, errors.New("fromAddress: required (an address like bot@example.com) unless smtpUsername or imapUsername is one"))
	} else if c.FromAddress != "" && !isAddress(c.FromAddress) {
		errs = append(errs, fmt.Errorf("fromAddress: %q is not an address", c.FromAddress))
	}
	if !c.AllowInsecure {
		if !c.SMTPUseSSL && !c.SMTPUseTLS {
			errs = append(errs, errors.New("smtpUseTls, smtpUseSsl: both false would send the password in clear text; enable one (allowInsecure is for a loopback test server)"))
		}
	} else if !isLoopback(c.IMAPHost) || !isLoopback(c.SMTPHost) {
		errs = append(errs, errors.New("allowInsecure: only for servers on loopback (127.0.0.1, ::1, localhost); a remote server needs TLS"))
	}
	if len(c.AllowFrom) == 0 {
		errs = append(errs, errors.New(`allowFrom: empty — nobody could mail the bot; list the sender addresses (or "*" for anyone)`))
	}
	for i, a := range c.AllowFrom {
		if a != "*" && !isAddress(a) {
			errs = append(errs, fmt.Errorf("allowFrom[%d]: %q is not an address", i, a))
		}
	}
	switch c.PostAction {
	case "":
	case "move":
		if strings.TrimSpace(c.PostActionMoveMailbox) == "" {
			errs = append(errs, errors.New(`postActionMoveMailbox: required with postAction "move"`))
		}
		if c.MoveTo != "" && c.MoveTo != c.PostActionMoveMailbox {
			errs = append(errs, errors.New("moveTo, postActionMoveMailbox: set one of them"))
		}
	default:
		errs = append(errs, fmt.Errorf(`postAction: %q is not supported (only "move"; use moveTo to keep handled mail in a folder)`, c.PostAction))
	}
	if mv := c.moveTo(); mv != "" && strings.EqualFold(mv, c.mailbox()) {
		errs = append(errs, fmt.Errorf("moveTo: %q is the watched mailbox itself", mv))
	}
	if c.MaxBodyChars < 0 {
		errs = append(errs, fmt.Errorf("maxBodyChars: %d is negative", c.MaxBodyChars))
	}
	if c.MaxAttachmentSize < 0 || c.MaxAttachmentsPerEmail < 0 {
		errs = append(errs, errors.New("maxAttachmentSize, maxAttachmentsPerEmail: must not be negative"))
	}
	for i, p := range c.AllowedAttachmentTypes {
		if p != "*" {
			if _, err := path.Match(p, "x/y"); err != nil || !strings.Contains(p, "/") {
				errs = append(errs, fmt.Errorf(`allowedAttachmentTypes[%d]: %q is not a MIME type pattern ("image/*", "application/pdf" or "*")`, i, p))
			}
		}
	}
	return errors.Join(errs...)
}

func (c Config) mailbox() string {
	if c.IMAPMailbox == "" {
		return "INBOX"
	}
	return c.IMAPMailbox
}

func (c Config) moveTo() string {
	if c.MoveTo != "" {
		return c.MoveTo
	}
	if c.PostAction == "move" {
		return c.PostActionMoveMailbox
	}
	return ""
}

func (c Config) fromAddress() string {
	for _, a := range []string{c.FromAddress, c.SMTPUsername, c.IMAPUsername} {
		if a != "" && isAddress(a) {
			return a
		}
	}
	return ""
}

func (c Config) pollInterval() time.Duration {
	s := c.PollIntervalSeconds
	if s <= 0 {
		s = DefaultPollSeconds
	}
	return time.Duration(max(s, MinPollSeconds)) * time.Second
}

// isAddress reports whether s is a bare address ("a@b.c").
func isAddress(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Name == "" && strings.EqualFold(a.Address, strings.TrimSpace(s))
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Factory registers the channel: registry.Register("email", email.Factory()).
func Factory() channels.Factory {
	return channels.Factory{
		New: func(cfg configs.ChannelsConfig, deps channels.Deps) (channels.Channel, error) {
			c := DefaultConfig()
			if err := cfg.Decode("email", &c); err != nil {
				return nil, err
			}
			return New(c, deps)
		},
		ConfigType: Config{},
	}
}

// Channel is the Email adapter.
type Channel struct {
	cfg      Config
	log      *slog.Logger
	from     string          // the bot's address
	self     map[string]bool // the bot's own addresses, lowercased
	allowAll bool
	allow    map[string]bool // allowFrom, lowercased
	mediaDir string

	// Fixed by New; tests in this package change them.
	tlsConfig    *tls.Config // nil: the system's roots
	pollInterval time.Duration
	idleRecheck  time.Duration // how long one IDLE lasts before a fresh search
	backoffMin   time.Duration
	backoffMax   time.Duration
	dialTimeout  time.Duration
	batch        int // unseen mails handled per search

	health channels.HealthState

	mu      sync.Mutex
	threads map[string]thread // chat id -> the last mail received from it
	handled *uidSet           // mails done with (delivered, denied or skipped)
}

var (
	_ channels.Channel        = (*Channel)(nil)
	_ channels.Limiter        = (*Channel)(nil)
	_ channels.MediaSender    = (*Channel)(nil)
	_ channels.HealthReporter = (*Channel)(nil)
)

// New builds the channel. It does no IO: Run connects.
func New(cfg Config, deps channels.Deps) (*Channel, error) {
	if cfg.IMAPMailbox == "" {
		cfg.IMAPMailbox = "INBOX"
	}
	if cfg.MaxBodyChars == 0 {
		cfg.MaxBodyChars = DefaultMaxBodyChars
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := deps.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Channel{
		cfg:          cfg,
		log:          log,
		from:         strings.ToLower(cfg.fromAddress()),
		self:         map[string]bool{},
		allow:        map[string]bool{},
		mediaDir:     deps.Paths.Media,
		pollInterval: cfg.pollInterval(),
		idleRecheck:  5 * time.Minute,
		backoffMin:   500 * time.Millisecond,
		backoffMax:   5 * time.Minute,
		dialTimeout:  30 * time.Second,
		batch:        100,
		threads:      map[string]thread{},
		handled:      newUIDSet(100_000),
	}
	for _, a := range []string{cfg.FromAddress, cfg.SMTPUsername, cfg.IMAPUsername} {
		if isAddress(a) {
			c.self[strings.ToLower(a)] = true
		}
	}
	for _, a := range cfg.AllowFrom {
		if a == "*" {
			c.allowAll = true
		} else {
			c.allow[strings.ToLower(strings.TrimSpace(a))] = true
		}
	}
	if cfg.AllowInsecure {
		log.Warn("email: allowInsecure is on: mail and passwords may cross the connection unencrypted (loopback test servers only)")
	}
	return c, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "email" }

// MessageLimit implements channels.Limiter. A mail has no practical size
// limit; an answer longer than this is mailed in parts rather than as one
// wall of text.
func (c *Channel) MessageLimit() int { return 50_000 }

// Health implements channels.HealthReporter.
func (c *Channel) Health() channels.Health { return c.health.Get() }

func (c *Channel) setHealth(state channels.State, err error) {
	msg := ""
	if err != nil {
		msg = c.redact(err.Error())
	}
	c.health.Set(state, msg)
}

// redact removes the passwords from an error text.
func (c *Channel) redact(s string) string {
	var pairs []string
	for _, p := range []string{c.cfg.IMAPPassword, c.cfg.SMTPPassword} {
		if p != "" {
			pairs = append(pairs, p, "***")
		}
	}
	if len(pairs) == 0 {
		return s
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

// allowed reports whether mail from addr (lowercased) is read.
func (c *Channel) allowed(addr string) bool { return c.allowAll || c.allow[addr] }

// ErrAuth is returned by Run when the IMAP server rejects the login.
var ErrAuth = errors.New("email: the IMAP server rejected the login; check channels.email.imapUsername and imapPassword (many providers need an app password)")

// Run watches the mailbox until ctx ends, and returns nil then. Transient
// failures reconnect with backoff and jitter; a rejected login returns
// ErrAuth (the manager restarts the channel later).
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	defer func() {
		if ctx.Err() != nil {
			c.setHealth(channels.StateStopped, nil)
		}
	}()
	for failures := 0; ; {
		if failures > 0 {
			if c.sleep(ctx, failures) != nil {
				return nil
			}
		}
		connected, err := c.session(ctx, in)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrAuth) {
			c.setHealth(channels.StateFailed, err)
			return err
		}
		if connected {
			failures = 1 // a short pause, so a server that drops us at once is not hammered
		} else {
			failures++
		}
		c.log.Warn("email: imap connection lost; reconnecting", "err", c.redact(fmt.Sprint(err)), "failures", failures)
		c.setHealth(channels.StateReconnecting, err)
	}
}

// sleep waits the backoff for the n-th consecutive failure (with jitter),
// or until ctx ends.
func (c *Channel) sleep(ctx context.Context, n int) error {
	d := c.backoffMin
	for i := 1; i < n && d < c.backoffMax; i++ {
		d *= 2
	}
	d = min(d, c.backoffMax)
	d = d/2 + time.Duration(rand.Int64N(int64(d)/2+1))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// uidSet remembers mails already dealt with ("uidvalidity/uid"), so a
// mail left unseen on purpose is not looked at again on every check. The
// oldest entries go first past max.
type uidSet struct {
	max   int
	order []string
	keys  map[string]bool
}

func newUIDSet(n int) *uidSet { return &uidSet{max: n, keys: map[string]bool{}} }

func (s *uidSet) has(key string) bool { return s.keys[key] }

func (s *uidSet) add(key string) {
	if s.keys[key] {
		return
	}
	s.keys[key] = true
	s.order = append(s.order, key)
	if len(s.order) > s.max {
		delete(s.keys, s.order[0])
		s.order = s.order[1:]
	}
}
