package telegram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/gateway/relay"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

func TestSendFormatsHTML(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), nil)
	ref, err := ch.Send(context.Background(), bus.Outbound{ChatID: "1001", Content: "**Done**: `x < y`"})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	sent := fake.Sent()
	if len(sent) != 1 || sent[0].ParseMode != "HTML" || sent[0].Text != "<b>Done</b>: <code>x &lt; y</code>" {
		t.Fatalf("sent %+v", sent)
	}
	if ref.MessageID != "1" || ref.ChatID != "1001" {
		t.Errorf("ref = %+v", ref)
	}
}

func TestHTMLRefusedFallsBackToPlain(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), nil)
	fake.RejectHTML(1)
	const text = "**bold** <odd>"
	ref, err := ch.Send(context.Background(), bus.Outbound{ChatID: "1001", Content: text})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	sent := fake.Sent()
	if len(sent) != 1 || sent[0].ParseMode != "" || sent[0].Text != text {
		t.Fatalf("sent %+v, want the Markdown as plain text", sent)
	}
	// Edits fall back the same way.
	fake.RejectHTML(1)
	if err := ch.Edit(context.Background(), ref, bus.Outbound{Content: text + " more"}); err != nil {
		t.Fatalf("Edit: %v", err)
	}
	if got := fake.Sent()[1]; !got.Edit || got.ParseMode != "" || got.Text != text+" more" {
		t.Errorf("edit %+v, want plain text", got)
	}
	// An edit to the same text is not an error (Telegram says "not modified").
	if err := ch.Edit(context.Background(), ref, bus.Outbound{Content: text + " more"}); err != nil {
		t.Errorf("unchanged Edit: %v", err)
	}
}

func TestSendErrors(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(*telegramtest.Server)
		chat      string
		retry     time.Duration // want a RetryAfterError with this
		permanent bool
	}{
		{"429 retry after", func(f *telegramtest.Server) { f.Fail("sendMessage", 429, "Too Many Requests: retry after 7", 7) }, "1001", 7 * time.Second, false},
		{"bot blocked", func(f *telegramtest.Server) { f.Block(1001) }, "1001", 0, true},
		{"chat not found", func(f *telegramtest.Server) { f.Fail("sendMessage", 400, "Bad Request: chat not found", 0) }, "1001", 0, true},
		{"bad chat id", func(*telegramtest.Server) {}, "not-a-chat", 0, true},
		{"server error", func(f *telegramtest.Server) { f.Fail("sendMessage", 502, "Bad Gateway", 0) }, "1001", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := telegramtest.New(t)
			ch := newChannel(t, fake, nil, t.TempDir(), nil)
			tt.setup(fake)
			_, err := ch.Send(context.Background(), bus.Outbound{ChatID: tt.chat, Content: "hi"})
			if err == nil {
				t.Fatal("Send succeeded, want an error")
			}
			var ra *channels.RetryAfterError
			if got := errors.As(err, &ra); got != (tt.retry > 0) || (got && ra.After != tt.retry) {
				t.Errorf("err = %v, want retry after %s", err, tt.retry)
			}
			var perm *channels.PermanentError
			if got := errors.As(err, &perm); got != tt.permanent {
				t.Errorf("err = %v: permanent %v, want %v", err, got, tt.permanent)
			}
			if strings.Contains(err.Error(), telegramtest.Token) {
				t.Errorf("error %q leaks the token", err)
			}
		})
	}
}

// TestDispatcherHonoursRetryAfter runs a 429 through the real dispatcher.
func TestDispatcherHonoursRetryAfter(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), nil)
	fake.Fail("sendMessage", 429, "Too Many Requests: retry after 1", 1)
	d := relay.NewDispatcher(relay.DispatcherConfig{MaxRetries: 2, RetryBase: 10 * time.Millisecond}, []channels.Channel{ch})
	out := make(chan bus.Outbound, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = d.Run(ctx, out) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	start := time.Now()
	out <- bus.Outbound{Channel: "telegram", ChatID: "1001", Kind: bus.KindMessage, Content: "eventually"}
	waitfor.True(t, "the retried message", func() bool { return len(fake.Sent()) == 1 })
	if took := time.Since(start); took < time.Second {
		t.Errorf("retried after %s, want the server's retry_after of 1 s", took)
	}
}

func TestReplyToMessage(t *testing.T) {
	for _, on := range []bool{true, false} {
		fake := telegramtest.New(t)
		ch := newChannel(t, fake, nil, t.TempDir(), func(c *Config) { c.ReplyToMessage = on })
		if _, err := ch.Send(context.Background(), bus.Outbound{ChatID: "1001", Content: "answer", ReplyTo: "5"}); err != nil {
			t.Fatalf("Send: %v", err)
		}
		want := int64(0)
		if on {
			want = 5
		}
		if got := fake.Sent()[0].ReplyTo; got != want {
			t.Errorf("replyToMessage=%v: reply_to %d, want %d", on, got, want)
		}
	}
}

func TestSendVoice(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), nil)
	path := filepath.Join(t.TempDir(), "voice-1.ogg")
	audio := []byte("OggS stand-in audio")
	os.WriteFile(path, audio, 0o600)
	ref, err := ch.SendVoice(context.Background(), bus.Outbound{ChatID: "1001", Voice: true, ReplyTo: "7",
		Media: []bus.Media{{Path: path, MIMEType: "audio/ogg"}}})
	if err != nil {
		t.Fatalf("SendVoice: %v", err)
	}
	sent := fake.Sent()
	if len(sent) != 1 || sent[0].Method != "sendVoice" || sent[0].Upload == nil || sent[0].Upload.Field != "voice" ||
		!bytes.Equal(sent[0].Upload.Data, audio) || sent[0].Text != "" {
		t.Fatalf("sent = %+v, want one sendVoice uploading the file without caption", sent)
	}
	if ref.MessageID != "1" {
		t.Errorf("ref = %+v", ref)
	}
	if _, err := ch.SendVoice(context.Background(), bus.Outbound{ChatID: "1001", Voice: true}); err == nil {
		t.Error("SendVoice without audio succeeded")
	}
}

func TestSendMedia(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), nil)
	dir := t.TempDir()
	png := filepath.Join(dir, "chart.png")
	txt := filepath.Join(dir, "notes.txt")
	os.WriteFile(png, []byte("\x89PNG fake"), 0o600)
	os.WriteFile(txt, []byte("some notes"), 0o600)
	ref, err := ch.SendMedia(context.Background(), bus.Outbound{ChatID: "1001", Content: "here **you** go", Media: []bus.Media{
		{Path: png, MIMEType: "image/png"}, {Path: txt, MIMEType: "text/plain"},
	}})
	if err != nil {
		t.Fatalf("SendMedia: %v", err)
	}
	sent := fake.Sent()
	if len(sent) != 2 {
		t.Fatalf("sent %d messages, want 2: %+v", len(sent), sent)
	}
	if sent[0].Method != "sendPhoto" || sent[0].Upload.Name != "chart.png" || !bytes.Equal(sent[0].Upload.Data, []byte("\x89PNG fake")) || sent[0].Text != "here <b>you</b> go" {
		t.Errorf("photo: %+v", sent[0])
	}
	if sent[1].Method != "sendDocument" || sent[1].Upload.Name != "notes.txt" || sent[1].Text != "" {
		t.Errorf("document: %+v", sent[1])
	}
	if ref.MessageID != "1" {
		t.Errorf("ref = %+v, want the first message", ref)
	}
	// A caption over Telegram's 1024 goes first as a message of its own.
	long := strings.Repeat("word ", 300)
	if _, err := ch.SendMedia(context.Background(), bus.Outbound{ChatID: "1001", Content: long, Media: []bus.Media{{Path: txt}}}); err != nil {
		t.Fatalf("SendMedia: %v", err)
	}
	sent = fake.Sent()[2:]
	if len(sent) != 2 || sent[0].Method != "sendMessage" || sent[1].Method != "sendDocument" || sent[1].Text != "" {
		t.Errorf("long caption: %+v", sent)
	}
	if _, err := ch.SendMedia(context.Background(), bus.Outbound{ChatID: "1001", Media: []bus.Media{{Path: filepath.Join(dir, "missing")}}}); !isPermanent(err) {
		t.Errorf("missing file: err = %v, want permanent", err)
	}
}

func isPermanent(err error) bool {
	var p *channels.PermanentError
	return errors.As(err, &p)
}

func TestWebhook(t *testing.T) {
	fake := telegramtest.New(t)
	var logs bytes.Buffer
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return logs.Write(p)
	}), nil))
	ch := newChannel(t, fake, log, t.TempDir(), func(c *Config) {
		c.WebhookURL, c.WebhookSecret = "https://bot.example.com/hooks/telegram", "s3cret_token-1"
		c.WebhookMaxConnections = 4
	})
	if got := ch.WebhookPath(); got != "/hooks/telegram" {
		t.Errorf("WebhookPath = %q", got)
	}
	srv := httptest.NewServer(ch.WebhookHandler())
	t.Cleanup(srv.Close)
	post := func(secret string, body []byte) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/hooks/telegram", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if secret != "" {
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatalf("POST: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	id, _ := fake.Send(telegramtest.Msg{From: alice, Chat: private(alice), Text: "via webhook"})
	update := fake.Update(id)
	if code := post("s3cret_token-1", update); code != http.StatusServiceUnavailable {
		t.Errorf("before Run: status %d, want 503", code)
	}

	in := run(t, ch)
	calls := fake.Calls("setWebhook")
	if len(calls) != 1 || calls[0].Params["url"] != "https://bot.example.com/hooks/telegram" || calls[0].Params["secret_token"] != "s3cret_token-1" || fmt.Sprint(calls[0].Params["max_connections"]) != "4" {
		t.Fatalf("setWebhook calls %+v", calls)
	}
	if n := len(fake.Calls("getUpdates")); n != 0 {
		t.Errorf("webhook mode polled %d times", n)
	}
	for _, secret := range []string{"", "wrong"} {
		if code := post(secret, update); code != http.StatusForbidden {
			t.Errorf("secret %q: status %d, want 403", secret, code)
		}
	}
	if len(in.all()) != 0 {
		t.Fatalf("an update without the right secret was delivered: %+v", in.all())
	}
	if code := post("s3cret_token-1", update); code != http.StatusOK {
		t.Fatalf("status %d, want 200", code)
	}
	// Delivered before the answer: Telegram's 200 is the acknowledgement.
	if got := in.all(); len(got) != 1 || got[0].Content != "via webhook" || got[0].SenderID != "1001|alice" {
		t.Fatalf("delivered %+v", got)
	}
	if code := post("s3cret_token-1", []byte(`{"update_id": "garbage"`)); code != http.StatusOK {
		t.Errorf("malformed update: status %d, want 200 (skipped)", code)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logs.String(), "malformed webhook update") {
		t.Errorf("malformed update not logged:\n%s", logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
