package email

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/email/emailtest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/bus"
)

const (
	alice   = "alice@example.test"
	mallory = "mallory@example.test"
)

// newServer starts the mail servers with accounts for the test users.
func newServer(t *testing.T, opts emailtest.Options) *emailtest.Server {
	t.Helper()
	srv := emailtest.New(t, opts)
	srv.AddAccount(alice, "alice-pw")
	srv.AddAccount(mallory, "mallory-pw")
	return srv
}

// testConfig points a config at srv, with TLS as srv speaks it.
func testConfig(srv *emailtest.Server, opts emailtest.Options) Config {
	cfg := DefaultConfig()
	cfg.Enabled, cfg.ConsentGranted, cfg.AllowFrom = true, true, []string{"*"}
	cfg.IMAPHost, cfg.IMAPPort = "127.0.0.1", srv.IMAPPort()
	cfg.IMAPUsername, cfg.IMAPPassword = emailtest.BotAddress, emailtest.BotPassword
	cfg.SMTPHost, cfg.SMTPPort = "127.0.0.1", srv.SMTPPort()
	cfg.SMTPUsername, cfg.SMTPPassword = emailtest.BotAddress, emailtest.BotPassword
	cfg.VerifyDKIM, cfg.VerifySPF = false, false // the test server adds no Authentication-Results
	cfg.IMAPUseSSL = opts.IMAP == emailtest.ImplicitTLS
	cfg.SMTPUseSSL = opts.SMTP == emailtest.ImplicitTLS
	cfg.SMTPUseTLS = opts.SMTP == emailtest.StartTLS
	cfg.AllowInsecure = opts.IMAP == emailtest.Plain || opts.SMTP == emailtest.Plain
	return cfg
}

// newChannel builds a channel against srv with short timings.
func newChannel(t *testing.T, srv *emailtest.Server, cfg Config, log *slog.Logger, mediaDir string) *Channel {
	t.Helper()
	if log == nil {
		var buf logBuffer
		log = buf.logger()
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("adapter log:\n%s", buf.String())
			}
		})
	}
	ch, err := New(cfg, channels.Deps{Log: log, Paths: configs.Paths{Media: mediaDir}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ch.tlsConfig = srv.ClientTLS()
	ch.backoffMin, ch.backoffMax = 10*time.Millisecond, 100*time.Millisecond
	ch.pollInterval = 50 * time.Millisecond
	ch.dialTimeout = 5 * time.Second
	return ch
}

func TestConformance(t *testing.T) {
	opts := emailtest.Options{IMAP: emailtest.ImplicitTLS, SMTP: emailtest.StartTLS}
	users := map[string]string{channeltest.Alice: alice, channeltest.Mallory: mallory}
	channeltest.Run(t, channeltest.Harness{
		Skip: map[string]string{
			channeltest.CheckInboundGroup: "email has no group chats: every mail is a conversation between its sender and the bot, answered to the sender alone",
		},
		Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
			srv := newServer(t, opts)
			ch := newChannel(t, srv, testConfig(srv, opts), env.Log, env.MediaDir)
			return channeltest.Fixture{
				Channel:  ch,
				SenderID: func(user string) string { return users[user] },
				Emit: func(m channeltest.Message) channeltest.Emitted {
					from := users[m.From]
					id, err := srv.Submit(emailtest.Mail{From: from, To: emailtest.BotAddress, Subject: "Conformance", Text: m.Text})
					if err != nil {
						t.Fatalf("submit: %v", err)
					}
					return channeltest.Emitted{ChatID: from, MessageID: id}
				},
				EmitMalformed: func() {
					raw := "From: this is not an address\r\nTo: " + emailtest.BotAddress + "\r\nSubject: junk\r\nMessage-Id: <junk@example.test>\r\n\r\nzzz\r\n"
					if err := srv.SubmitRaw(alice, []string{emailtest.BotAddress}, []byte(raw)); err != nil {
						t.Fatalf("submit: %v", err)
					}
				},
				Drop: srv.Drop,
				Sent: func() []channeltest.Sent {
					var out []channeltest.Sent
					for _, r := range srv.Received() {
						if r.From != emailtest.BotAddress {
							continue
						}
						p, err := emailtest.Parse(r.Raw)
						if err != nil {
							t.Errorf("the bot sent an unparsable mail: %v", err)
							continue
						}
						id, _ := p.Header.MessageID()
						out = append(out, channeltest.Sent{ChatID: r.To[0], MessageID: id, Text: p.Text, At: r.At})
					}
					return out
				},
				Acked: func(e channeltest.Emitted) bool {
					f, ok, err := srv.Find(emailtest.BotAddress, "INBOX", e.MessageID)
					return err == nil && ok && f.Seen()
				},
			}
		},
	})
}

// inbox records what the channel delivers and denies one sender.
type inbox struct {
	mu   sync.Mutex
	got  []bus.Inbound
	deny string
}

func (in *inbox) Deliver(ctx context.Context, m bus.Inbound) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if m.SenderID == in.deny {
		return channels.ErrDenied
	}
	in.got = append(in.got, m)
	return nil
}

func (in *inbox) all() []bus.Inbound {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]bus.Inbound(nil), in.got...)
}

func (in *inbox) wait(t *testing.T, text string) bus.Inbound {
	t.Helper()
	var got bus.Inbound
	waitFor(t, "inbound "+text, func() bool {
		for _, m := range in.all() {
			if strings.Contains(m.Content, text) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

func (in *inbox) count(text string) int {
	n := 0
	for _, m := range in.all() {
		if strings.Contains(m.Content, text) {
			n++
		}
	}
	return n
}

// run runs ch until the test ends and checks Run returned nil.
func run(t *testing.T, ch *Channel, in channels.Inbox) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, in) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Run did not return")
		}
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// logBuffer collects log output for assertions.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func submit(t *testing.T, srv *emailtest.Server, m emailtest.Mail) string {
	t.Helper()
	if m.To == "" {
		m.To = emailtest.BotAddress
	}
	id, err := srv.Submit(m)
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return id
}

func TestConsentRequired(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Enabled, cfg.AllowFrom = true, []string{alice}
	cfg.IMAPHost, cfg.IMAPUsername, cfg.IMAPPassword, cfg.SMTPHost = "imap.example.test", "bot@example.test", "pw", "smtp.example.test"
	_, err := New(cfg, channels.Deps{})
	if !errors.Is(err, ErrNoConsent) {
		t.Fatalf("New without consentGranted: err = %v, want ErrNoConsent", err)
	}
	if !strings.Contains(err.Error(), "consentGranted") {
		t.Errorf("error %q does not name consentGranted", err)
	}
	cfg.ConsentGranted = true
	if _, err := New(cfg, channels.Deps{}); err != nil {
		t.Fatalf("New with consent: %v", err)
	}
}

func TestValidate(t *testing.T) {
	base := func() Config {
		c := DefaultConfig()
		c.Enabled, c.ConsentGranted, c.AllowFrom = true, true, []string{"Alice@Example.test"}
		c.IMAPHost, c.IMAPUsername, c.IMAPPassword = "imap.example.test", "bot@example.test", "secret-pw"
		c.SMTPHost, c.SMTPUsername, c.SMTPPassword = "smtp.example.test", "bot@example.test", "secret-pw"
		return c
	}
	tests := []struct {
		name string
		edit func(*Config)
		want string // "" = valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"missing imap host", func(c *Config) { c.IMAPHost = "" }, "imapHost: required"},
		{"missing imap password", func(c *Config) { c.IMAPPassword = "" }, "imapPassword: required"},
		{"smtp user without password", func(c *Config) { c.SMTPPassword = "" }, "set both or neither"},
		{"cleartext smtp", func(c *Config) { c.SMTPUseTLS, c.SMTPUseSSL = false, false }, "clear text"},
		{"insecure remote", func(c *Config) { c.AllowInsecure = true }, "only for servers on loopback"},
		{"insecure loopback", func(c *Config) {
			c.AllowInsecure, c.IMAPHost, c.SMTPHost, c.SMTPUseTLS = true, "127.0.0.1", "localhost", false
		}, ""},
		{"empty allowFrom", func(c *Config) { c.AllowFrom = nil }, "allowFrom: empty"},
		{"bad allowFrom", func(c *Config) { c.AllowFrom = []string{"alice"} }, "allowFrom[0]"},
		{"no from address", func(c *Config) { c.IMAPUsername, c.SMTPUsername, c.SMTPPassword = "bot", "", "" }, "fromAddress: required"},
		{"bad port", func(c *Config) { c.IMAPPort = 0 }, "imapPort"},
		{"postAction delete", func(c *Config) { c.PostAction = "delete" }, "postAction"},
		{"postAction move", func(c *Config) { c.PostAction, c.PostActionMoveMailbox = "move", "Archive" }, ""},
		{"move to itself", func(c *Config) { c.MoveTo = "inbox" }, "watched mailbox"},
		{"bad attachment type", func(c *Config) { c.AllowedAttachmentTypes = []string{"pdf"} }, "allowedAttachmentTypes[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.edit(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: %v, want valid", err)
			case tt.want != "" && err == nil:
				t.Fatalf("Validate: nil, want an error with %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("Validate: %v, want it to say %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "secret-pw") {
				t.Errorf("error shows the password: %v", err)
			}
		})
	}
}

func TestFactoryDecodesPythonKeys(t *testing.T) {
	var cc configs.ChannelsConfig
	raw := `{"email":{"enabled":true,"consentGranted":true,"imapHost":"imap.example.test","imapUsername":"bot@example.test",
		"imapPassword":"pw","smtpHost":"smtp.example.test","smtpPort":465,"smtpUseSsl":true,"smtpUsername":"bot@example.test",
		"smtpPassword":"pw","pollIntervalSeconds":2,"postAction":"move","postActionMoveMailbox":"Done","allowFrom":["a@b.test"]}}`
	if err := cc.UnmarshalJSON([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	got, err := Factory().New(cc, channels.Deps{})
	if err != nil {
		t.Fatalf("Factory: %v", err)
	}
	ch := got.(*Channel)
	if ch.pollInterval != MinPollSeconds*time.Second {
		t.Errorf("poll interval = %s, want the %ds floor", ch.pollInterval, MinPollSeconds)
	}
	if mv := ch.cfg.moveTo(); mv != "Done" {
		t.Errorf("moveTo = %q, want Done", mv)
	}
	if !ch.cfg.MarkSeen || !ch.cfg.IMAPUseSSL || ch.cfg.IMAPPort != 993 || ch.cfg.MaxBodyChars != 12000 {
		t.Errorf("defaults lost: %+v", ch.cfg)
	}
}
