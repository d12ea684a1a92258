package email

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/email/emailtest"
	"github.com/nanobot-go/nanobot/gateway/bus"
)

func TestIdlePushesNewMail(t *testing.T) {
	opts := emailtest.Options{IMAP: emailtest.Plain, SMTP: emailtest.Plain}
	srv := newServer(t, opts)
	var logs logBuffer
	ch := newChannel(t, srv, testConfig(srv, opts), logs.logger(), "")
	ch.pollInterval, ch.idleRecheck = time.Hour, time.Hour // only IDLE can bring the second mail
	in := &inbox{}
	run(t, ch, in)
	submit(t, srv, emailtest.Mail{From: alice, Subject: "one", Text: "first mail"})
	in.wait(t, "first mail")
	submit(t, srv, emailtest.Mail{From: alice, Subject: "two", Text: "second mail"})
	in.wait(t, "second mail")
	if !strings.Contains(logs.String(), "mode=idle") {
		t.Errorf("log does not say the channel idles:\n%s", logs.String())
	}
}

func TestPollsWithoutIdle(t *testing.T) {
	opts := emailtest.Options{IMAP: emailtest.Plain, SMTP: emailtest.Plain, NoIdle: true}
	srv := newServer(t, opts)
	var logs logBuffer
	cfg := testConfig(srv, opts)
	cfg.MarkSeen = false // handled mail stays unseen: it must still be delivered once
	ch := newChannel(t, srv, cfg, logs.logger(), "")
	in := &inbox{}
	run(t, ch, in)
	first := submit(t, srv, emailtest.Mail{From: alice, Subject: "poll", Text: "polled mail"})
	in.wait(t, "polled mail")
	submit(t, srv, emailtest.Mail{From: alice, Subject: "poll", Text: "a later one"})
	in.wait(t, "a later one") // at least one more poll ran after the first mail
	if n := in.count("polled mail"); n != 1 {
		t.Errorf("the first mail was delivered %d times, want once", n)
	}
	if !strings.Contains(logs.String(), "mode=poll") {
		t.Errorf("log does not say the channel polls:\n%s", logs.String())
	}
	f, ok, err := srv.Find(emailtest.BotAddress, "INBOX", first)
	if err != nil || !ok || f.Seen() {
		t.Errorf("with markSeen false the mail is %+v (found %v, err %v), want it still unseen", f, ok, err)
	}
}

func TestMoveToFolder(t *testing.T) {
	opts := emailtest.Options{IMAP: emailtest.Plain, SMTP: emailtest.Plain, Mailboxes: []string{"Archive"}}
	srv := newServer(t, opts)
	cfg := testConfig(srv, opts)
	cfg.MoveTo = "Archive"
	ch := newChannel(t, srv, cfg, nil, "")
	in := &inbox{}
	run(t, ch, in)
	id := submit(t, srv, emailtest.Mail{From: alice, Subject: "file me", Text: "archive this"})
	in.wait(t, "archive this")
	waitFor(t, "the mail in Archive", func() bool {
		f, ok, _ := srv.Find(emailtest.BotAddress, "Archive", id)
		return ok && f.Seen()
	})
	if _, ok, err := srv.Find(emailtest.BotAddress, "INBOX", id); err != nil || ok {
		t.Errorf("the mail is still in INBOX (err %v)", err)
	}
}

// TestStrangersAndLoopsGetNothing runs the channel behind the real Gate
// with pairing on: mail from a sender not on allowFrom, the bot's own mail
// and automatic mail are left unread and never answered, and no pairing
// code goes out by mail.
func TestStrangersAndLoopsGetNothing(t *testing.T) {
	opts := emailtest.Options{IMAP: emailtest.Plain, SMTP: emailtest.Plain}
	srv := newServer(t, opts)
	cfg := testConfig(srv, opts)
	cfg.AllowFrom = []string{"Alice@Example.TEST", "carol@example.test", "dave@example.test"} // matched case-insensitively
	var logs logBuffer
	ch := newChannel(t, srv, cfg, logs.logger(), "")
	next := &inbox{}
	pairing := channels.NewPairingStore(filepath.Join(t.TempDir(), "pairing.json"))
	gate := &channels.Gate{
		AllowFrom: map[string][]string{"email": cfg.AllowFrom},
		Pairing:   pairing,
		Next:      next,
		Reply: func(ctx context.Context, m bus.Outbound) error {
			_, err := ch.Send(ctx, m)
			return err
		},
	}
	run(t, ch, gate)

	skipped := map[string]string{
		"stranger": submit(t, srv, emailtest.Mail{From: mallory, Subject: "hi", Text: "let me in"}),
		// Found by the server's substring search, refused by the exact check.
		"lookalike": submit(t, srv, emailtest.Mail{From: "malice@example.test", Subject: "hi", Text: "almost alice"}),
		"own":       submit(t, srv, emailtest.Mail{From: emailtest.BotAddress, Subject: "Re: hi", Text: "bot talking to itself"}),
		"vacation":  submit(t, srv, emailtest.Mail{From: alice, Subject: "Out of office", Text: "I am away", Headers: map[string]string{"Auto-Submitted": "auto-replied"}}),
		"bulk":      submit(t, srv, emailtest.Mail{From: alice, Subject: "Newsletter", Text: "news", Headers: map[string]string{"Precedence": "bulk"}}),
		"list":      submit(t, srv, emailtest.Mail{From: alice, Subject: "[list] topic", Text: "list post", Headers: map[string]string{"List-Id": "<l.example.test>"}}),
	}
	submit(t, srv, emailtest.Mail{From: "dave@example.test", Subject: "me too", Text: "dave writes"})
	submit(t, srv, emailtest.Mail{From: "ALICE@example.test", Subject: "real", Text: "the real one"})
	got := next.wait(t, "the real one")
	if got.SenderID != alice || got.ChatID != alice {
		t.Errorf("sender %q chat %q, want %q for both", got.SenderID, got.ChatID, alice)
	}
	next.wait(t, "dave writes")
	if n := len(next.all()); n != 2 {
		t.Errorf("%d mails reached the agent, want 2: %+v", n, next.all())
	}
	for what, id := range skipped {
		f, ok, err := srv.Find(emailtest.BotAddress, "INBOX", id)
		if err != nil || !ok || f.Seen() {
			t.Errorf("%s mail: %+v found %v err %v, want it left unseen", what, f, ok, err)
		}
	}
	for _, r := range srv.Received() {
		if r.AuthUser != "" { // only the bot authenticates
			t.Errorf("the bot mailed %v", r.To)
		}
	}
	if p := pairing.Pending(); len(p) != 0 {
		t.Errorf("pairing requests were made: %+v", p)
	}
	if strings.Contains(logs.String(), mallory) {
		t.Errorf("the stranger's mail was looked at (the search should leave it out):\n%s", logs.String())
	}
	// Nor can the agent be made to mail a stranger.
	_, err := ch.Send(t.Context(), bus.Outbound{Channel: "email", ChatID: mallory, Content: "hello"})
	var pe *channels.PermanentError
	if !errors.As(err, &pe) {
		t.Errorf("Send to a stranger: %v, want a permanent error", err)
	}
}

func TestHTMLMailQuotesAndCap(t *testing.T) {
	opts := emailtest.Options{IMAP: emailtest.Plain, SMTP: emailtest.Plain}
	srv := newServer(t, opts)
	cfg := testConfig(srv, opts)
	cfg.MaxBodyChars = 60
	ch := newChannel(t, srv, cfg, nil, "")
	in := &inbox{}
	run(t, ch, in)

	submit(t, srv, emailtest.Mail{From: alice, Subject: "html", HTML: `<html><head><style>p{color:red}</style></head><body><p>Hello &amp; welcome,</p><p>see <a href="https://example.test/doc">the doc</a></p><script>alert(1)</script></body></html>`})
	got := in.wait(t, "Hello & welcome")
	for _, want := range []string{"Subject: html", "the doc (https://example.test/doc)"} {
		if !strings.Contains(got.Content, want) {
			t.Errorf("content %q lacks %q", got.Content, want)
		}
	}
	for _, bad := range []string{"color:red", "alert", "<p>"} {
		if strings.Contains(got.Content, bad) {
			t.Errorf("content %q contains %q", got.Content, bad)
		}
	}

	submit(t, srv, emailtest.Mail{From: alice, Subject: "Re: html", Text: "Thanks!\n\nOn Mon, 1 Jan 2024, Bot <bot@example.test> wrote:\n> the old answer\n> more of it\n"})
	got = in.wait(t, "Thanks!")
	if strings.Contains(got.Content, "old answer") || strings.Contains(got.Content, "wrote:") {
		t.Errorf("quoted mail kept: %q", got.Content)
	}

	submit(t, srv, emailtest.Mail{From: alice, Subject: "long", Text: "start " + strings.Repeat("word ", 100)})
	got = in.wait(t, "start word")
	if !strings.Contains(got.Content, "60 of its") || len(got.Content) > 200 {
		t.Errorf("long mail not capped at 60 characters: %q", got.Content)
	}

	submit(t, srv, emailtest.Mail{From: alice, Subject: "cmd", Text: "/new\n"})
	waitFor(t, "the command", func() bool {
		for _, m := range in.all() {
			if m.Content == "/new" {
				return true
			}
		}
		return false
	})
}

func TestAttachments(t *testing.T) {
	pdf := bytes.Repeat([]byte("%PDF-1.4 "), 20)
	big := bytes.Repeat([]byte{0xAB}, 5000)
	files := []emailtest.Attachment{
		{Name: "report.pdf", ContentType: "application/pdf", Data: pdf},
		{Name: "../../etc/huge.pdf", ContentType: "application/pdf", Data: big},
		{Name: "photo.png", ContentType: "image/png", Data: []byte("png")},
	}
	opts := emailtest.Options{IMAP: emailtest.Plain, SMTP: emailtest.Plain}

	t.Run("off by default", func(t *testing.T) {
		srv := newServer(t, opts)
		media := t.TempDir()
		ch := newChannel(t, srv, testConfig(srv, opts), nil, media)
		in := &inbox{}
		run(t, ch, in)
		submit(t, srv, emailtest.Mail{From: alice, Subject: "files", Text: "see attached", Attachments: files})
		got := in.wait(t, "see attached")
		if len(got.Media) != 0 {
			t.Errorf("media %+v saved with attachments off", got.Media)
		}
		if !strings.Contains(got.Content, "report.pdf (application/pdf): not read, attachments are off") {
			t.Errorf("content %q does not say the attachment was left out", got.Content)
		}
		if entries, _ := os.ReadDir(media); len(entries) != 0 {
			t.Errorf("media folder has %d files", len(entries))
		}
	})

	t.Run("on with caps", func(t *testing.T) {
		srv := newServer(t, opts)
		media := t.TempDir()
		cfg := testConfig(srv, opts)
		cfg.AllowedAttachmentTypes = []string{"application/*"}
		cfg.MaxAttachmentSize = 1000
		ch := newChannel(t, srv, cfg, nil, media)
		in := &inbox{}
		run(t, ch, in)
		submit(t, srv, emailtest.Mail{From: alice, Subject: "files", Text: "see attached", Attachments: files})
		got := in.wait(t, "see attached")
		if len(got.Media) != 1 {
			t.Fatalf("media = %+v, want the one small pdf", got.Media)
		}
		m := got.Media[0]
		if filepath.Dir(m.Path) != media || m.Name != "report.pdf" || m.MIMEType != "application/pdf" || m.Size != int64(len(pdf)) {
			t.Errorf("media = %+v", m)
		}
		if b, err := os.ReadFile(m.Path); err != nil || !bytes.Equal(b, pdf) {
			t.Errorf("saved file differs (err %v)", err)
		}
		for _, want := range []string{"huge.pdf (application/pdf): not read, larger than 1000 bytes", "photo.png (image/png): not read, type not allowed"} {
			if !strings.Contains(got.Content, want) {
				t.Errorf("content %q lacks %q", got.Content, want)
			}
		}
	})
}

func TestDKIMAndSPF(t *testing.T) {
	opts := emailtest.Options{IMAP: emailtest.Plain, SMTP: emailtest.Plain}
	srv := newServer(t, opts)
	cfg := testConfig(srv, opts)
	cfg.VerifyDKIM, cfg.VerifySPF = true, true
	ch := newChannel(t, srv, cfg, nil, "")
	in := &inbox{}
	run(t, ch, in)
	ar := func(v string) map[string]string { return map[string]string{"Authentication-Results": v} }
	forged := submit(t, srv, emailtest.Mail{From: alice, Subject: "x", Text: "forged one", Headers: ar("mx.example.test; dkim=pass header.d=evil.test; spf=pass smtp.mailfrom=x@evil.test")})
	none := submit(t, srv, emailtest.Mail{From: alice, Subject: "x", Text: "unchecked one"})
	submit(t, srv, emailtest.Mail{From: alice, Subject: "x", Text: "genuine one", Headers: ar("mx.example.test; dkim=pass (good sig) header.d=example.test; spf=pass smtp.mailfrom=alice@example.test")})
	in.wait(t, "genuine one")
	if n := len(in.all()); n != 1 {
		t.Errorf("%d mails delivered, want only the genuine one", n)
	}
	for _, id := range []string{forged, none} {
		if f, ok, _ := srv.Find(emailtest.BotAddress, "INBOX", id); !ok || f.Seen() {
			t.Errorf("mail %s: found %v seen %v, want left unseen", id, ok, f.Seen())
		}
	}
}

func TestIMAPStartTLSAndWrongPassword(t *testing.T) {
	opts := emailtest.Options{IMAP: emailtest.StartTLS, SMTP: emailtest.ImplicitTLS}
	srv := newServer(t, opts)
	ch := newChannel(t, srv, testConfig(srv, opts), nil, "")
	in := &inbox{}
	run(t, ch, in)
	submit(t, srv, emailtest.Mail{From: alice, Subject: "tls", Text: "over starttls"})
	in.wait(t, "over starttls")
	for _, a := range srv.AuthAttempts() {
		if a.Protocol == "imap" && !a.TLS {
			t.Errorf("IMAP login without TLS: %+v", a)
		}
	}

	cfg := testConfig(srv, opts)
	cfg.IMAPPassword = "wrong-secret"
	bad := newChannel(t, srv, cfg, nil, "")
	err := bad.Run(t.Context(), &inbox{})
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("Run with a wrong password = %v, want ErrAuth", err)
	}
	if h := bad.Health(); h.State != channels.StateFailed || strings.Contains(h.LastError, "wrong-secret") {
		t.Errorf("health = %+v, want failed without the password", h)
	}
}
