package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/email/emailtest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway"
	"github.com/nanobot-go/nanobot/providers/openai"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestEmailEndToEnd runs the real gateway (registry, manager, agent loop,
// dispatcher, the OpenAI backend on a scripted model) with the Email
// channel against real in-process IMAP and SMTP servers: a user's mail
// gets the scripted answer mailed back in the same thread, read back from
// the user's own mailbox over IMAP; a slash command is answered without
// the model; a stranger's mail gets nothing.
func TestEmailEndToEnd(t *testing.T) {
	const user, stranger = "ann@example.test", "eve@example.test"
	mail := emailtest.New(t, emailtest.Options{})
	mail.AddAccount(user, "ann-pw")
	mail.AddAccount(stranger, "eve-pw")

	llm := providertest.New(t)
	llm.Handle(func(providertest.Request) providertest.Reply {
		return providertest.Reply{Text: scriptedAnswer, Chunks: 6, EventDelay: 20 * time.Millisecond}
	})
	chans := map[string]any{
		"sendProgress": false, "sendToolHints": false,
		"email": map[string]any{
			"enabled": true, "consentGranted": true, "allowFrom": []string{"Ann@Example.test"},
			"imapHost": "127.0.0.1", "imapPort": mail.IMAPPort(), "imapUseSsl": false,
			"imapUsername": emailtest.BotAddress, "imapPassword": emailtest.BotPassword,
			"smtpHost": "127.0.0.1", "smtpPort": mail.SMTPPort(), "smtpUseTls": false, "smtpUseSsl": false,
			"smtpUsername": emailtest.BotAddress, "smtpPassword": emailtest.BotPassword,
			"allowInsecure": true, "verifyDkim": false, "verifySpf": false,
		},
	}
	dir := t.TempDir()
	body, _ := json.Marshal(map[string]any{
		"agents":   map[string]any{"defaults": map[string]any{"model": "test-model"}},
		"channels": chans,
		"gateway":  map[string]any{"heartbeat": map[string]any{"enabled": false}},
	})
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := configs.Load(configs.Options{Path: path, Environ: []string{}, Platforms: platformTypes()})
	if err != nil {
		t.Fatal(err)
	}
	provider, err := openai.New(openai.Options{APIBase: llm.OpenAIBase()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	ready := make(chan string, 1)
	go func() {
		done <- gateway.Run(ctx, gateway.Options{
			Config: &loaded.Config, Paths: loaded.Paths, Provider: provider, Model: "test-model",
			Channels: newChannelRegistry(), Listener: ln, Ready: func(a string) { ready <- a },
			DrainTimeout: 2 * time.Second, Stderr: io.Discard, Log: slog.New(slog.DiscardHandler),
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("gateway: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("gateway did not stop")
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("gateway exited: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("gateway not ready")
	}

	// answers returns the bot's mails in ann's INBOX.
	answers := func() []emailtest.Parsed {
		raws, err := mail.Messages(user, "INBOX")
		if err != nil {
			t.Fatalf("read ann's mailbox: %v", err)
		}
		var out []emailtest.Parsed
		for _, raw := range raws {
			p, err := emailtest.Parse(raw)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			out = append(out, p)
		}
		return out
	}

	if _, err := mail.Submit(emailtest.Mail{From: stranger, To: emailtest.BotAddress, Subject: "hi", Text: "let me in"}); err != nil {
		t.Fatal(err)
	}
	asked, err := mail.Submit(emailtest.Mail{From: user, To: emailtest.BotAddress, Subject: "A question", Text: "hello there"})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the answer in ann's mailbox", 30*time.Second, func() bool { return len(answers()) >= 1 })
	got := answers()
	if len(got) != 1 {
		t.Fatalf("ann got %d mails, want one answer (email cannot edit, so a stream is one mail)", len(got))
	}
	a := got[0]
	if strings.TrimSpace(a.Text) != scriptedAnswer {
		t.Errorf("answer = %q, want %q", a.Text, scriptedAnswer)
	}
	if s, _ := a.Header.Subject(); s != "Re: A question" {
		t.Errorf("subject = %q", s)
	}
	if irt, _ := a.Header.MsgIDList("In-Reply-To"); len(irt) != 1 || irt[0] != asked {
		t.Errorf("In-Reply-To = %v, want [%s]", irt, asked)
	}
	if f, ok, err := mail.Find(emailtest.BotAddress, "INBOX", asked); err != nil || !ok || !f.Seen() {
		t.Errorf("ann's mail in the bot's INBOX: %+v found %v err %v, want it seen", f, ok, err)
	}
	if n := len(llm.Requests()); n != 1 {
		t.Errorf("model called %d times, want once", n)
	}

	// A slash command is answered by the gateway, not the model.
	if _, err := mail.Submit(emailtest.Mail{From: user, To: emailtest.BotAddress, Subject: "Re: A question", Text: "/help"}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the /help answer", 30*time.Second, func() bool {
		got := answers()
		return len(got) >= 2 && strings.Contains(got[len(got)-1].Text, "/new")
	})
	if n := len(llm.Requests()); n != 1 {
		t.Errorf("/help reached the model (%d requests)", n)
	}
	if raws, err := mail.Messages(stranger, "INBOX"); err != nil || len(raws) != 0 {
		t.Errorf("the stranger got %d mails (err %v), want none", len(raws), err)
	}
}
