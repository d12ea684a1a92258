package email

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/email/emailtest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

func config(s *emailtest.Server, insecure bool) Config {
	c := DefaultConfig()
	c.Enabled, c.ConsentGranted, c.AllowFrom = true, true, []string{"*"}
	c.IMAPHost, c.IMAPPort, c.IMAPUsername, c.IMAPPassword, c.IMAPUseSSL = s.Host, s.IMAPPort, emailtest.BotAddress, emailtest.BotPassword, false
	c.SMTPHost, c.SMTPPort, c.SMTPUsername, c.SMTPPassword = s.Host, s.SMTPPort, emailtest.BotAddress, emailtest.BotPassword
	c.SMTPUseTLS, c.AllowInsecure = !insecure, insecure
	c.PollIntervalS = 5
	return c
}

func newChannel(t *testing.T, s *emailtest.Server, log *slog.Logger, deps channels.Deps, edit func(*Config)) *Channel {
	t.Helper()
	c := config(s, false)
	if edit != nil {
		edit(&c)
	}
	deps.Log = log
	ch, err := New(c, deps)
	if err != nil {
		t.Fatal(err)
	}
	ch.roots = s.Roots
	ch.backoffMin, ch.backoffMax = 20*time.Millisecond, 200*time.Millisecond
	return ch
}

var users = map[string]string{channeltest.Alice: "alice@example.test", channeltest.Mallory: "mallory@example.test"}

func TestConformance(t *testing.T) {
	channeltest.Run(t, channeltest.Harness{
		Timeout: 15 * time.Second,
		Skip: map[string]string{
			channeltest.CheckInboundGroup:   "email has no group chats",
			channeltest.CheckDropConnection: "covered by TestReconnect (the in-process IMAP server cannot cut one client's connection)",
		},
		Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
			s := emailtest.New(t, emailtest.Options{})
			ch := newChannel(t, s, env.Log, channels.Deps{Paths: configs.Paths{Media: env.MediaDir}}, nil)
			return channeltest.Fixture{
				Channel:  ch,
				SenderID: func(user string) string { return users[user] },
				Emit: func(m channeltest.Message) channeltest.Emitted {
					from := users[m.From]
					id := s.Send(t, from, "a question", m.Text)
					return channeltest.Emitted{ChatID: from, MessageID: id}
				},
				EmitMalformed: func() {
					s.Deliver(t, "alice@example.test", []byte("this is not a mail at all, no headers\r\n"))
				},
				Sent: func() []channeltest.Sent {
					var out []channeltest.Sent
					for _, m := range s.Outbox() {
						id := strings.Trim(m.Header.Get("Message-ID"), "<>")
						out = append(out, channeltest.Sent{ChatID: m.To, MessageID: id, Text: strings.TrimSpace(m.Body), At: time.Now()})
					}
					return out
				},
				// A mail is acknowledged by being marked read once it was
				// delivered. Mail from senders the gate refuses is left
				// unread on purpose (it is the owner's mail): there is no
				// acknowledgement to wait for.
				Acked: func(e channeltest.Emitted) bool {
					return e.ChatID == users[channeltest.Mallory] || s.Seen(t, e.MessageID)
				},
			}
		},
	})
}

// recorder records deliveries and refuses the stranger (if any).
type recorder = channeltest.Recorder

func newRecorder(stranger string) *recorder {
	return &channeltest.Recorder{Refuse: func(s string) bool { return stranger != "" && s == stranger }}
}

func run(t *testing.T, ch *Channel, in channels.Inbox) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, in) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return")
		}
	})
}

func TestThreadingFilteringAndSeen(t *testing.T) {
	s := emailtest.New(t, emailtest.Options{})
	in := newRecorder("stranger@example.test")
	ch := newChannel(t, s, nil, channels.Deps{}, nil)
	run(t, ch, in)

	first := s.Send(t, "Alice <Alice@Example.test>", "Trip to Lisbon", "Which flights are cheapest?\n\nOn Mon, Bob wrote:\n> old stuff")
	s.Send(t, "stranger@example.test", "hello", "let me in")
	s.Send(t, "alice@example.test", "Out of office", "I am away", "Auto-Submitted: auto-replied")
	s.Send(t, "news@example.test", "Weekly digest", "news", "Precedence: bulk")
	s.Send(t, emailtest.BotAddress, "Re: loop", "my own mail")
	waitfor.True(t, "alice's mail", func() bool { return len(in.All()) >= 1 })
	got := in.All()[0]
	if got.SenderID != "alice@example.test" || got.ChatID != "alice@example.test" || got.MessageID != first {
		t.Errorf("inbound ids %+v", got)
	}
	if !strings.Contains(got.Content, "Which flights are cheapest?") || strings.Contains(got.Content, "old stuff") || !strings.Contains(got.Content, "Subject: Trip to Lisbon") {
		t.Errorf("content %q", got.Content)
	}
	if !strings.Contains(got.Content, "untrusted") && !strings.Contains(strings.ToLower(got.Content), "external") {
		t.Errorf("mail body not marked as external content: %q", got.Content)
	}
	// Only Alice's mail was read; the rest stays unread for the owner.
	waitfor.True(t, "alice's mail marked seen", func() bool { return s.Unseen(t, "INBOX") == 4 })
	// Mail is read oldest first: once a later mail from alice is in, every
	// mail before it was looked at.
	s.Send(t, "alice@example.test", "One more thing", "and the hotel?")
	waitfor.True(t, "alice's later mail", func() bool { return len(in.All()) >= 2 })
	if all := in.All(); len(all) != 2 || !strings.Contains(all[1].Content, "and the hotel?") {
		t.Errorf("delivered %+v, want only alice's two mails", all)
	}

	// The reply is threaded.
	if _, err := ch.Send(t.Context(), bus.Outbound{ChatID: got.ChatID, Content: "TAP at 7:05, 89 EUR.", Metadata: got.Metadata}); err != nil {
		t.Fatal(err)
	}
	out := s.Outbox()
	if len(out) != 1 {
		t.Fatalf("outbox %d", len(out))
	}
	h := out[0].Header
	if h.Get("Subject") != "Re: Trip to Lisbon" || h.Get("In-Reply-To") != "<"+first+">" || !strings.Contains(h.Get("References"), first) || h.Get("Auto-Submitted") != "auto-replied" {
		t.Errorf("reply headers %v", h)
	}
	if out[0].To != "alice@example.test" || !strings.Contains(out[0].Body, "89 EUR") {
		t.Errorf("reply %+v", out[0])
	}
	// Alice answers in the thread: same session.
	replyID := strings.Trim(h.Get("Message-ID"), "<>")
	s.Send(t, "alice@example.test", "Re: Re: Trip to Lisbon", "Book it", "In-Reply-To: <"+replyID+">", fmt.Sprintf("References: <%s> <%s>", first, replyID))
	waitfor.True(t, "the follow-up", func() bool { return len(in.All()) == 3 })
	if a, b := in.All()[0].SessionKey, in.All()[2].SessionKey; a != b || a == "" {
		t.Errorf("thread sessions %q and %q differ", a, b)
	}
	if got := replySubject("Re: Re: AW: Trip"); got != "Re: Trip" {
		t.Errorf("replySubject = %q", got)
	}
}

func TestHTMLMailPollingAndMoveTo(t *testing.T) {
	s := emailtest.New(t, emailtest.Options{NoIdle: true})
	in := newRecorder("")
	ch := newChannel(t, s, nil, channels.Deps{}, func(c *Config) { c.MoveTo = "Processed" })
	run(t, ch, in)
	s.Send(t, "alice@example.test", "html", "<html><head><style>p{}</style></head><body><p>Hello <b>there</b></p><p>Second line</p><script>x()</script></body></html>", "Content-Type: text/html; charset=utf-8")
	waitfor.True(t, "the html mail (polling)", func() bool { return len(in.All()) == 1 })
	c := in.All()[0].Content
	if !strings.Contains(c, "Hello there") || !strings.Contains(c, "Second line") || strings.Contains(c, "x()") || strings.Contains(c, "<p>") {
		t.Errorf("html as text: %q", c)
	}
	waitfor.True(t, "the mail moved", func() bool { return s.Count(t, "Processed") == 1 && s.Count(t, "INBOX") == 0 })
}

func TestSecurityRules(t *testing.T) {
	s := emailtest.New(t, emailtest.Options{})
	c := config(s, false)
	c.ConsentGranted = false
	if _, err := New(c, channels.Deps{}); err == nil || !strings.Contains(err.Error(), "consentGranted") {
		t.Errorf("no consent: %v", err)
	}
	c = config(s, false)
	c.SMTPUseTLS = false
	if _, err := New(c, channels.Deps{}); err == nil || !strings.Contains(err.Error(), "smtpUseTls") {
		t.Errorf("plaintext SMTP accepted: %v", err)
	}
	// A server without TLS: the password is not sent unless allowInsecure.
	plain := emailtest.New(t, emailtest.Options{Insecure: true})
	ch := newChannel(t, plain, nil, channels.Deps{}, nil)
	_, err := ch.Send(t.Context(), bus.Outbound{ChatID: "alice@example.test", Content: "hi"})
	if err == nil || strings.Contains(err.Error(), emailtest.BotPassword) {
		t.Errorf("send over plaintext: %v", err)
	}
	ins := newChannel(t, plain, nil, channels.Deps{}, func(c *Config) { c.SMTPUseTLS, c.AllowInsecure = false, true })
	if _, err := ins.Send(t.Context(), bus.Outbound{ChatID: "alice@example.test", Content: "hi"}); err != nil {
		t.Errorf("allowInsecure send: %v", err)
	}
	in := newRecorder("")
	run(t, ins, in)
	plain.Send(t, "alice@example.test", "q", "over plain IMAP")
	waitfor.True(t, "mail over an insecure (allowed) connection", func() bool { return len(in.All()) == 1 })
}

func TestWrongPasswordFails(t *testing.T) {
	s := emailtest.New(t, emailtest.Options{})
	ch := newChannel(t, s, nil, channels.Deps{}, func(c *Config) { c.IMAPPassword = "wrong-password-xyz" })
	err := ch.Run(t.Context(), newRecorder(""))
	if !errors.Is(err, ErrLogin) || !channels.IsFatal(err) || strings.Contains(err.Error(), "wrong-password-xyz") {
		t.Fatalf("Run = %v; want ErrLogin as a fatal error without the password", err)
	}
	if ch.Health().State != channels.StateFailed {
		t.Errorf("health %+v", ch.Health())
	}
}

func TestAttachments(t *testing.T) {
	s := emailtest.New(t, emailtest.Options{})
	in := newRecorder("")
	media := t.TempDir()
	ch := newChannel(t, s, nil, channels.Deps{Paths: configs.Paths{Media: media}}, func(c *Config) {
		c.Attachments = AttachmentConfig{Enabled: true, MaxBytes: 100, MaxCount: 5}
	})
	run(t, ch, in)
	raw := "From: alice@example.test\r\nTo: " + emailtest.BotAddress + "\r\nSubject: files\r\nMessage-ID: <att1@example.test>\r\n" +
		"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=XX\r\n\r\n" +
		"--XX\r\nContent-Type: text/plain\r\n\r\nsee the files\r\n" +
		"--XX\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=\"notes.txt\"\r\n\r\nsmall notes\r\n" +
		"--XX\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=\"big.bin\"\r\n\r\n" + strings.Repeat("x", 500) + "\r\n" +
		"--XX--\r\n"
	s.Deliver(t, "alice@example.test", []byte(raw))
	got := in.Wait(t, "see the files")
	if len(got.Media) != 1 || got.Media[0].Name != "notes.txt" || !strings.HasPrefix(got.Media[0].Path, media) {
		t.Errorf("media %+v", got.Media)
	}
	if !strings.Contains(got.Content, "big.bin: not downloaded") {
		t.Errorf("content %q lacks the over-cap note", got.Content)
	}
}
