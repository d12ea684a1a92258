package telegram

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

const tableAnswer = "Prices:\n\n| plan | per month |\n|---|---:|\n| **small** | 5 |\n| large | 20 |\n\nThat is all."

func richChannel(t *testing.T, fake *telegramtest.Server, log *slog.Logger) *Channel {
	return newChannel(t, fake, log, t.TempDir(), func(c *Config) { c.RichMessages, c.ReplyToMessage = true, true })
}

func TestRichMessageForATable(t *testing.T) {
	fake := telegramtest.New(t)
	ch := richChannel(t, fake, nil)
	actions := []bus.Action{{Label: "Again", Command: "/new"}}
	ref, err := ch.Send(context.Background(), bus.Outbound{ChatID: "1001", Content: tableAnswer, ReplyTo: "5", ThreadID: "9", Actions: actions})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	sent := fake.Sent()
	if len(sent) != 1 || !sent[0].Rich || sent[0].Text != tableAnswer {
		t.Fatalf("sent %+v, want the Markdown as a rich message", sent)
	}
	if s := sent[0]; s.ReplyTo != 5 || s.ThreadID != 9 || len(s.Buttons) != 1 || s.Buttons[0][0].CallbackData != "/new" {
		t.Errorf("rich message %+v: want the reply, topic and button of the message", s)
	}
	if ref.MessageID != "1" {
		t.Errorf("ref = %+v", ref)
	}

	// Without a table, and for a message a stream edits, it is HTML.
	for _, m := range []bus.Outbound{
		{ChatID: "1001", Content: "**no table** here"},
		{ChatID: "1001", Content: tableAnswer, StreamID: "s1"},
		{ChatID: "1001", Content: "```\n| a | b |\n|---|---|\n```"},
	} {
		if _, err := ch.Send(context.Background(), m); err != nil {
			t.Fatalf("Send: %v", err)
		}
		if got := fake.Sent(); got[len(got)-1].Rich || got[len(got)-1].ParseMode != "HTML" {
			t.Errorf("%q (stream %q) sent %+v, want HTML", m.Content, m.StreamID, got[len(got)-1])
		}
	}
}

func TestRichMessagesOffByDefault(t *testing.T) {
	fake := telegramtest.New(t)
	ch := newChannel(t, fake, nil, t.TempDir(), nil)
	if _, err := ch.Send(context.Background(), bus.Outbound{ChatID: "1001", Content: tableAnswer}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if s := fake.Sent(); len(s) != 1 || s[0].Rich || s[0].Method != "sendMessage" {
		t.Errorf("sent %+v, want an HTML message", s)
	}
	if n := len(fake.Calls("sendRichMessage")); n != 0 {
		t.Errorf("sendRichMessage called %d times with richMessages off", n)
	}
}

// A Bot API server without rich messages: the table goes as HTML, later
// ones do not try again, and the switch is logged once.
func TestRichMessagesUnavailable(t *testing.T) {
	fake := telegramtest.New(t)
	fake.Refuse("sendRichMessage", 404, "Not Found: method not found")
	var sink logs
	ch := richChannel(t, fake, slog.New(slog.NewTextHandler(&sink, nil)))
	for range 2 {
		if _, err := ch.Send(context.Background(), bus.Outbound{ChatID: "1001", Content: tableAnswer}); err != nil {
			t.Fatalf("Send: %v", err)
		}
	}
	for _, s := range fake.Sent() {
		if s.Rich || s.Method != "sendMessage" || s.ParseMode != "HTML" {
			t.Errorf("sent %+v, want HTML", s)
		}
	}
	if n := len(fake.Calls("sendRichMessage")); n != 1 {
		t.Errorf("sendRichMessage called %d times, want once", n)
	}
	if n := sink.count("rich messages are not available"); n != 1 {
		t.Errorf("the switch logged %d times, want once", n)
	}
}

// One rich message refused (its Markdown, say) goes as HTML; the next
// table tries again.
func TestRichMessageRefusedOnce(t *testing.T) {
	fake := telegramtest.New(t)
	ch := richChannel(t, fake, nil)
	fake.Fail("sendRichMessage", 400, "Bad Request: can't parse rich message", 0)
	for range 2 {
		if _, err := ch.Send(context.Background(), bus.Outbound{ChatID: "1001", Content: tableAnswer}); err != nil {
			t.Fatalf("Send: %v", err)
		}
	}
	if s := fake.Sent(); len(s) != 2 || s[0].Rich || !s[1].Rich {
		t.Errorf("sent %+v, want HTML, then a rich message", s)
	}
}

func TestRichMessageErrors(t *testing.T) {
	fake := telegramtest.New(t)
	ch := richChannel(t, fake, nil)
	fake.Fail("sendRichMessage", 429, "Too Many Requests: retry after 3", 3)
	_, err := ch.Send(context.Background(), bus.Outbound{ChatID: "1001", Content: tableAnswer})
	var ra *channels.RetryAfterError
	if !errors.As(err, &ra) || ra.After != 3*time.Second {
		t.Errorf("err = %v, want retry after 3s", err)
	}
	fake.Block(1001)
	if _, err := ch.Send(context.Background(), bus.Outbound{ChatID: "1001", Content: tableAnswer}); !isPermanent(err) {
		t.Errorf("blocked: err = %v, want permanent", err)
	}
	if len(fake.Sent()) != 0 {
		t.Errorf("sent %+v", fake.Sent())
	}
}

// A drafted answer with a table ends as a rich message: the message that
// ends a drafted stream is never edited.
func TestDraftedTableEndsAsRichMessage(t *testing.T) {
	fake := telegramtest.New(t)
	ch := richChannel(t, fake, nil)
	s := &streamer{out: dispatch(t, ch), to: chatOf(private(alice)), id: "t1"}
	s.delta(tableAnswer[:20])
	waitfor.True(t, "a draft", func() bool { return len(fake.Drafts(alice.ID)) > 0 })
	s.delta(tableAnswer[20:])
	s.end(false)
	waitfor.True(t, "the answer", func() bool { return len(fake.Sent()) == 1 })
	if got := fake.Sent()[0]; !got.Rich || got.Text != tableAnswer {
		t.Errorf("sent %+v, want the answer as a rich message", got)
	}
}

func TestHasTable(t *testing.T) {
	for _, tt := range []struct {
		md   string
		want bool
	}{
		{tableAnswer, true},
		{"| a | b |\n| --- | --- |", true},
		{"a | b\n---|---", false}, // no leading pipe: not what toHTML reads as a table either
		{"| just | pipes |", false},
		{"```\n| a | b |\n|---|---|\n```", false},
		{"~~~md\n| a | b |\n|---|---|\n~~~\n", false},
		{"plain text", false},
	} {
		if got := hasTable(tt.md); got != tt.want {
			t.Errorf("hasTable(%q) = %v, want %v", tt.md, got, tt.want)
		}
	}
}
