package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/email/emailtest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestEmailEndToEnd: a mail to the bot's mailbox (delivered over real SMTP
// into a real IMAP server) goes through the whole gateway to the scripted
// model, and the answer is mailed back in the same thread. A mail from a
// stranger is left unread and never reaches the model.
func TestEmailEndToEnd(t *testing.T) {
	mail := emailtest.New(t, emailtest.Options{Insecure: true}) // loopback: allowInsecure
	llm := providertest.New(t)
	llm.Handle(func(providertest.Request) providertest.Reply {
		return providertest.Reply{Text: "The cheapest flight leaves at 7:05."}
	})
	base := startTestGateway(t, map[string]any{"email": map[string]any{
		"enabled": true, "consentGranted": true, "allowFrom": []string{"ann@example.test"},
		"imapHost": mail.Host, "imapPort": mail.IMAPPort, "imapUseSsl": false,
		"imapUsername": emailtest.BotAddress, "imapPassword": emailtest.BotPassword,
		"smtpHost": mail.Host, "smtpPort": mail.SMTPPort, "smtpUseTls": false,
		"smtpUsername": emailtest.BotAddress, "smtpPassword": emailtest.BotPassword,
		"allowInsecure": true, "pollIntervalS": 5,
	}}, llm)

	mail.Send(t, "stranger@example.test", "hi", "please answer me")
	id := mail.Send(t, "Ann <ann@example.test>", "Flights to Lisbon", "Which is the cheapest flight?")
	waitfor.Within(t, "the answer by mail", 30*time.Second, func() bool { return len(mail.Outbox()) > 0 })
	out := mail.Outbox()[0]
	if out.To != "ann@example.test" || !strings.Contains(out.Body, "The cheapest flight leaves at 7:05.") {
		t.Errorf("reply %+v", out)
	}
	if out.Header.Get("Subject") != "Re: Flights to Lisbon" || out.Header.Get("In-Reply-To") != "<"+id+">" {
		t.Errorf("reply not threaded: %v", out.Header)
	}
	if n := len(llm.Requests()); n != 1 {
		t.Errorf("%d model requests; the stranger's mail must not reach the model", n)
	}
	if u := mail.Unseen(t, "INBOX"); u != 1 {
		t.Errorf("%d unread mails, want the stranger's one left unread", u)
	}
	// Mail is read oldest first, so the stranger's was looked at before
	// Ann's was accepted: one accepted mail means no turn for the stranger
	// can still be running.
	if n := inboundCount(t, base, "email", "accepted"); n != 1 {
		t.Errorf("%d mails accepted, want only Ann's", n)
	}
	if n := len(mail.Outbox()); n != 1 {
		t.Errorf("%d mails sent, want 1 (nothing to the stranger)", n)
	}
}
