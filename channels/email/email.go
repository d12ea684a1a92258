// Package email is the Email channel: it reads a mailbox over IMAP (IDLE
// when the server has it, polling otherwise) and answers over SMTP, in the
// thread of the mail it answers. It reads nothing until consentGranted is
// set, and only mail from allowFrom addresses: mail from anyone else is
// left untouched and unread. Replies carry In-Reply-To, References and a
// "Re:" subject, and mark themselves Auto-Submitted so that other robots
// do not answer them; auto-replies and list mail are never answered.
//
// Concurrency: Send and SendMedia share nothing with Run: each opens an SMTP
// connection of its own, so they may be called from any goroutine,
// concurrently with Run and with each other. Run reads the mailbox on its
// own goroutine, one IMAP connection at a time; a helper goroutine per
// connection closes it when ctx ends, and is waited for before the next one.
package email

import (
	"crypto/x509"
	"log/slog"
	"net/mail"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/redact"
)

// Config is channels.email (the Python nanobot's names).
type Config struct {
	configs.ChannelCommon
	// ConsentGranted must be true: the owner agrees that the bot reads
	// this mailbox.
	ConsentGranted bool `json:"consentGranted"`

	IMAPHost     string `json:"imapHost"`
	IMAPPort     int    `json:"imapPort"`
	IMAPUsername string `json:"imapUsername"`
	IMAPPassword string `json:"imapPassword"`
	IMAPMailbox  string `json:"imapMailbox"`
	// IMAPUseSSL is implicit TLS (port 993); false uses STARTTLS.
	IMAPUseSSL bool `json:"imapUseSsl"`

	SMTPHost     string `json:"smtpHost"`
	SMTPPort     int    `json:"smtpPort"`
	SMTPUsername string `json:"smtpUsername"`
	SMTPPassword string `json:"smtpPassword"`
	// SMTPUseTLS is STARTTLS (port 587); SMTPUseSSL implicit TLS (465).
	SMTPUseTLS bool `json:"smtpUseTls"`
	SMTPUseSSL bool `json:"smtpUseSsl"`
	// FromAddress is the bot's address (default smtpUsername).
	FromAddress string `json:"fromAddress"`

	// PollIntervalS is how often the mailbox is checked when the server
	// has no IDLE (default 30).
	PollIntervalS int `json:"pollIntervalS"`
	// MarkSeen flags processed mail as read (default true); MoveTo moves it
	// to that folder instead.
	MarkSeen *bool  `json:"markSeen"`
	MoveTo   string `json:"moveTo"`
	// MaxBodyChars caps the text passed to the agent (default 12000).
	MaxBodyChars int `json:"maxBodyChars"`
	// Attachments are off by default.
	Attachments AttachmentConfig `json:"attachments"`
	// AllowInsecure permits plaintext connections and passwords without
	// TLS (only for servers on loopback, e.g. tests).
	AllowInsecure bool `json:"allowInsecure"`
}

// AttachmentConfig controls attachment downloads.
type AttachmentConfig struct {
	Enabled  bool  `json:"enabled"`
	MaxBytes int64 `json:"maxBytes"`
	MaxCount int   `json:"maxCount"`
}

// DefaultConfig is disabled, with the defaults of every option.
func DefaultConfig() Config {
	return Config{IMAPPort: 993, IMAPMailbox: "INBOX", IMAPUseSSL: true, SMTPPort: 587, SMTPUseTLS: true,
		PollIntervalS: 30, MaxBodyChars: 12000, Attachments: AttachmentConfig{MaxBytes: 10 << 20, MaxCount: 5}}
}

func (c Config) markSeen() bool { return c.MarkSeen == nil || *c.MarkSeen }

func (c Config) from() string {
	if c.FromAddress != "" {
		return c.FromAddress
	}
	return c.SMTPUsername
}

// Validate checks the config; errors name the key under channels.email.
func (c Config) Validate() error {
	var p channels.Problems
	if !c.ConsentGranted {
		p.Addf("consentGranted: must be true before the bot may read this mailbox (it reads mail from allowFrom senders and marks it read)")
	}
	for key, v := range map[string]string{"imapHost": c.IMAPHost, "imapUsername": c.IMAPUsername, "smtpHost": c.SMTPHost} {
		if v == "" {
			p.Addf("%s: required", key)
		}
	}
	for key, port := range map[string]int{"imapPort": c.IMAPPort, "smtpPort": c.SMTPPort} {
		if port <= 0 || port > 65535 {
			p.Addf("%s: %d is not a port", key, port)
		}
	}
	if _, err := mail.ParseAddress(c.from()); err != nil {
		p.Addf("fromAddress: %q is not an address (set fromAddress or smtpUsername)", c.from())
	}
	if c.SMTPUseSSL && c.SMTPUseTLS {
		p.Addf("smtpUseSsl: choose implicit TLS (smtpUseSsl) or STARTTLS (smtpUseTls), not both")
	}
	if !c.AllowInsecure && !c.SMTPUseSSL && !c.SMTPUseTLS {
		p.Addf("smtpUseTls: the password would be sent unencrypted; enable smtpUseTls or smtpUseSsl")
	}
	if c.PollIntervalS < 5 {
		p.Addf("pollIntervalS: at least 5, got %d", c.PollIntervalS)
	}
	if c.MaxBodyChars < 100 {
		p.Addf("maxBodyChars: at least 100, got %d", c.MaxBodyChars)
	}
	return p.Err()
}

// Factory registers the channel: registry.Register("email", email.Factory()).
func Factory() channels.Factory {
	return channels.NewFactory("email", DefaultConfig, New)
}

// Channel is the Email adapter.
type Channel struct {
	cfg      Config
	log      *slog.Logger
	redact   *redact.Redactor
	mediaDir string
	// roots verifies the servers' certificates (nil = the system's); tests
	// set it.
	roots *x509.CertPool

	// Timing, fixed by New; tests shorten them.
	backoffMin, backoffMax time.Duration
	idleRestart            time.Duration

	health channels.HealthState
}

var (
	_ channels.Channel        = (*Channel)(nil)
	_ channels.Limiter        = (*Channel)(nil)
	_ channels.MediaSender    = (*Channel)(nil)
	_ channels.HealthReporter = (*Channel)(nil)
)

// New builds the channel; Run connects.
func New(cfg Config, deps channels.Deps) (*Channel, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Channel{cfg: cfg, log: deps.Logger(), redact: deps.Redactor(cfg.IMAPPassword, cfg.SMTPPassword), mediaDir: deps.MediaDir("email"), backoffMin: time.Second, backoffMax: 5 * time.Minute, idleRestart: 25 * time.Minute}
	return c, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "email" }

// MessageLimit implements channels.Limiter: one mail carries a long answer.
func (c *Channel) MessageLimit() int { return 100000 }

// Health implements channels.HealthReporter.
func (c *Channel) Health() channels.Health { return c.health.Get() }
