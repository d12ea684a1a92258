package email

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/email/emailtest"
	"github.com/nanobot-go/nanobot/gateway/bus"
)

// replyTo answers an inbound mail the way the agent loop does.
func replyTo(in bus.Inbound, text string) bus.Outbound {
	return bus.Outbound{Channel: in.Channel, ChatID: in.ChatID, Kind: bus.KindMessage, Content: text, ReplyTo: in.MessageID, Metadata: in.Metadata, Final: true}
}

// aliceMail reads the one mail in alice's INBOX whose Message-ID is id.
func aliceMail(t *testing.T, srv *emailtest.Server, id string) emailtest.Parsed {
	t.Helper()
	raws, err := srv.Messages(alice, "INBOX")
	if err != nil {
		t.Fatalf("read alice's INBOX: %v", err)
	}
	for _, raw := range raws {
		p, err := emailtest.Parse(raw)
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		if got, _ := p.Header.MessageID(); got == id {
			return p
		}
	}
	t.Fatalf("no mail %s in alice's INBOX (%d mails)", id, len(raws))
	return emailtest.Parsed{}
}

func TestReplyThreadsAndReadsBack(t *testing.T) {
	opts := emailtest.Options{IMAP: emailtest.ImplicitTLS, SMTP: emailtest.ImplicitTLS}
	srv := newServer(t, opts)
	ch := newChannel(t, srv, testConfig(srv, opts), nil, "")
	in := &inbox{}
	run(t, ch, in)

	root := submit(t, srv, emailtest.Mail{From: alice, FromName: "Alice", Subject: "Question", Text: "what is 6*7?"})
	first := in.wait(t, "what is 6*7?")
	if first.MessageID != root || first.Metadata["subject"] != "Question" || first.Metadata["from_name"] != "Alice" {
		t.Errorf("inbound = %+v, want message id %s and the subject", first, root)
	}
	ref, err := ch.Send(t.Context(), replyTo(first, "It is **42**. See [the docs](https://example.test/a?b=1&c=2) and `x*y`."))
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	p := aliceMail(t, srv, ref.MessageID)
	h := p.Header
	if s, _ := h.Subject(); s != "Re: Question" {
		t.Errorf("subject = %q, want %q", s, "Re: Question")
	}
	if irt, _ := h.MsgIDList("In-Reply-To"); len(irt) != 1 || irt[0] != root {
		t.Errorf("In-Reply-To = %v, want [%s]", irt, root)
	}
	if refs, _ := h.MsgIDList("References"); len(refs) != 1 || refs[0] != root {
		t.Errorf("References = %v, want [%s]", refs, root)
	}
	if from, _ := h.AddressList("From"); len(from) != 1 || from[0].Address != emailtest.BotAddress {
		t.Errorf("From = %v", from)
	}
	if v := h.Get("Auto-Submitted"); v != "auto-replied" {
		t.Errorf("Auto-Submitted = %q, want auto-replied", v)
	}
	if want := "It is 42. See the docs <https://example.test/a?b=1&c=2> and `x*y`."; strings.TrimSpace(p.Text) != want {
		t.Errorf("plain text = %q, want %q", p.Text, want)
	}
	for _, want := range []string{"<strong>42</strong>", `<a href="https://example.test/a?b=1&amp;c=2">the docs</a>`, "<code>x*y</code>"} {
		if !strings.Contains(p.HTML, want) {
			t.Errorf("HTML part lacks %q:\n%s", want, p.HTML)
		}
	}
	var sent emailtest.Received
	for _, r := range srv.Received() {
		if r.AuthUser == emailtest.BotAddress {
			sent = r
		}
	}
	if !sent.TLS || sent.From != emailtest.BotAddress || len(sent.To) != 1 || sent.To[0] != alice {
		t.Errorf("submission = from %q to %v tls %v auth %q, want an authenticated TLS submission from the bot to alice", sent.From, sent.To, sent.TLS, sent.AuthUser)
	}

	// Alice answers in the thread: the subject gets no second "Re:", and
	// References grow.
	second := submit(t, srv, emailtest.Mail{From: alice, Subject: "Re: Question", Text: "and 6*8?", InReplyTo: ref.MessageID, References: []string{root, ref.MessageID}})
	in2 := in.wait(t, "and 6*8?")
	if in2.ChatID != first.ChatID {
		t.Errorf("a mail in the same thread has chat %q, want %q (one session per sender)", in2.ChatID, first.ChatID)
	}
	// An answer sent without metadata (the agent on its own) still threads
	// under the last mail.
	ref2, err := ch.Send(t.Context(), bus.Outbound{Channel: "email", ChatID: alice, Kind: bus.KindMessage, Content: "48"})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	h = aliceMail(t, srv, ref2.MessageID).Header
	if s, _ := h.Subject(); s != "Re: Question" {
		t.Errorf("subject = %q, want no double Re:", s)
	}
	if refs, _ := h.MsgIDList("References"); strings.Join(refs, " ") != strings.Join([]string{root, ref.MessageID, second}, " ") {
		t.Errorf("References = %v, want the whole thread", refs)
	}
}

func TestSendMediaAttachesFiles(t *testing.T) {
	opts := emailtest.Options{IMAP: emailtest.Plain, SMTP: emailtest.Plain}
	srv := newServer(t, opts)
	cfg := testConfig(srv, opts)
	cfg.MaxAttachmentSize = 100
	ch := newChannel(t, srv, cfg, nil, "")
	dir := t.TempDir()
	small := filepath.Join(dir, "notes.txt")
	big := filepath.Join(dir, "big.bin")
	if err := os.WriteFile(small, []byte("remember the milk"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, make([]byte, 500), 0o600); err != nil {
		t.Fatal(err)
	}
	ref, err := ch.SendMedia(t.Context(), bus.Outbound{Channel: "email", ChatID: alice, Content: "Two files.", Media: []bus.Media{{Path: small}, {Path: big}}})
	if err != nil {
		t.Fatalf("SendMedia: %v", err)
	}
	p := aliceMail(t, srv, ref.MessageID)
	if len(p.Attachments) != 1 || p.Attachments[0].Name != "notes.txt" || string(p.Attachments[0].Data) != "remember the milk" {
		t.Errorf("attachments = %+v, want notes.txt only", p.Attachments)
	}
	if !strings.Contains(p.Text, "big.bin: not attached, larger than 100 bytes") {
		t.Errorf("text %q does not name the file left out", p.Text)
	}
	if s, _ := p.Header.Subject(); s != "Message from nanobot" {
		t.Errorf("subject of a fresh mail = %q", s)
	}
}

func TestSMTPRefusesCleartextPassword(t *testing.T) {
	// The server offers no STARTTLS; the channel asks for it.
	opts := emailtest.Options{IMAP: emailtest.Plain, SMTP: emailtest.Plain}
	srv := newServer(t, opts)
	cfg := testConfig(srv, opts)
	cfg.SMTPUseTLS, cfg.AllowInsecure = true, true // allowInsecure is for IMAP here
	ch := newChannel(t, srv, cfg, nil, "")
	_, err := ch.Send(t.Context(), bus.Outbound{Channel: "email", ChatID: alice, Content: "secret"})
	if err == nil || !strings.Contains(err.Error(), "STARTTLS") {
		t.Errorf("Send without STARTTLS on offer = %v, want a STARTTLS error", err)
	}
	if strings.Contains(err.Error(), emailtest.BotPassword) {
		t.Errorf("error shows the password: %v", err)
	}

	// Without allowInsecure the channel never authenticates in clear text.
	ch.cfg.SMTPUseTLS, ch.cfg.AllowInsecure = false, false
	_, err = ch.Send(t.Context(), bus.Outbound{Channel: "email", ChatID: alice, Content: "secret"})
	var pe *channels.PermanentError
	if !errors.Is(err, errCleartextAuth) || !errors.As(err, &pe) {
		t.Errorf("Send over a plain connection = %v, want the permanent errCleartextAuth", err)
	}
	for _, a := range srv.AuthAttempts() {
		if a.Protocol == "smtp" {
			t.Errorf("the password was sent: %+v", a)
		}
	}
	if n := len(srv.Received()); n != 0 {
		t.Errorf("%d mails went out", n)
	}
}

func TestSendErrors(t *testing.T) {
	opts := emailtest.Options{IMAP: emailtest.Plain, SMTP: emailtest.StartTLS}
	srv := newServer(t, opts)
	cfg := testConfig(srv, opts)
	cfg.SMTPPassword = "wrong-secret"
	ch := newChannel(t, srv, cfg, nil, "")
	var pe *channels.PermanentError
	_, err := ch.Send(t.Context(), bus.Outbound{Channel: "email", ChatID: alice, Content: "hi"})
	if !errors.As(err, &pe) || strings.Contains(err.Error(), "wrong-secret") {
		t.Errorf("Send with a rejected login = %v, want a permanent error without the password", err)
	}
	for _, chat := range []string{"", "not an address", "a@b.test, c@d.test"} {
		if _, err := ch.Send(t.Context(), bus.Outbound{Channel: "email", ChatID: chat, Content: "hi"}); !errors.As(err, &pe) {
			t.Errorf("Send to %q = %v, want a permanent error", chat, err)
		}
	}
	if _, err := ch.Send(t.Context(), bus.Outbound{Channel: "email", ChatID: alice, Content: "  "}); !errors.As(err, &pe) {
		t.Errorf("empty Send = %v, want a permanent error", err)
	}
}

func TestAutoReplyDisabled(t *testing.T) {
	opts := emailtest.Options{IMAP: emailtest.Plain, SMTP: emailtest.Plain}
	srv := newServer(t, opts)
	cfg := testConfig(srv, opts)
	cfg.AutoReplyEnabled = false
	ch := newChannel(t, srv, cfg, nil, "")
	in := &inbox{}
	run(t, ch, in)
	submit(t, srv, emailtest.Mail{From: alice, Subject: "hi", Text: "read but do not answer"})
	got := in.wait(t, "read but do not answer")
	ref, err := ch.Send(t.Context(), replyTo(got, "an answer"))
	if err != nil || ref.MessageID != "" {
		t.Errorf("Send = %+v, %v; want nothing sent and no error", ref, err)
	}
	forced := replyTo(got, "forced")
	forced.Metadata = map[string]any{"force_send": true}
	if ref, err = ch.Send(t.Context(), forced); err != nil || ref.MessageID == "" {
		t.Fatalf("Send with force_send = %+v, %v", ref, err)
	}
	var bot int
	for _, r := range srv.Received() {
		if r.AuthUser != "" {
			bot++
		}
	}
	if bot != 1 {
		t.Errorf("the bot sent %d mails, want only the forced one", bot)
	}
}
