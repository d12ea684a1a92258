package mochat

import (
	"context"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/mochat/mochattest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

func runChannel(t *testing.T, ch *Channel, rec *channeltest.Recorder) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, rec) }()
	t.Cleanup(func() { cancel(); <-done })
	waitfor.Within(t, "connected", 10*time.Second, func() bool { return ch.Health().State == channels.StateConnected })
}

// Under "non-mention", panel messages that do not mention the bot are
// answered together once the panel has been quiet for replyDelayMs.
func TestReplyDelayQuietPeriodMergesHeldMessages(t *testing.T) {
	f := newFake(t)
	noBadCalls(t, f)
	rec := &channeltest.Recorder{}
	ch := newChannel(t, f, nil, t.TempDir(), func(c *Config) {
		c.ReplyDelayMode, c.ReplyDelayMs = DelayNonMention, 300
	})
	runChannel(t, ch, rec)
	first := time.Now()
	f.Post(lobby, mochattest.Message{From: "bob", Text: "anyone here?"})
	f.Post(lobby, mochattest.Message{From: "carol", Text: "the build is red"})
	got := rec.Wait(t, "the build is red")
	if waited := time.Since(first); waited < 300*time.Millisecond {
		t.Errorf("answered after %s, before the 300ms quiet period", waited)
	}
	want := "nick bob: anyone here?\nnick carol: the build is red"
	if got.Content != want || got.ChatID != "panel:lobby" || got.SenderID != "carol" || got.Metadata["buffered_count"] != "2" {
		t.Errorf("delivered %+v, want one message %q from carol", got, want)
	}
	if n := len(rec.All()); n != 1 {
		t.Errorf("%d deliveries, want 1 (the merged one)", n)
	}
}

// A mention answers at once, carrying what was held; with the delay off
// (the default) an unmentioned panel message is not answered at all.
func TestReplyDelayMentionFlushesAndOffDrops(t *testing.T) {
	f := newFake(t)
	noBadCalls(t, f)
	rec := &channeltest.Recorder{}
	ch := newChannel(t, f, nil, t.TempDir(), func(c *Config) {
		c.ReplyDelayMode, c.ReplyDelayMs = DelayNonMention, int(time.Hour/time.Millisecond)
	})
	runChannel(t, ch, rec)
	f.Post(lobby, mochattest.Message{From: "bob", Text: "context first"})
	f.Post(lobby, mochattest.Message{From: "bob", Text: "bot, what do you think?", Mentions: []string{mochattest.BotID}})
	got := rec.Wait(t, "what do you think")
	if want := "nick bob: context first\nnick bob: bot, what do you think?"; got.Content != want {
		t.Errorf("content %q, want %q", got.Content, want)
	}

	f2 := newFake(t)
	rec2 := &channeltest.Recorder{}
	off := newChannel(t, f2, nil, t.TempDir(), nil)
	if off.delay != nil {
		t.Fatal("the reply delay is on by default")
	}
	runChannel(t, off, rec2)
	f2.Post(lobby, mochattest.Message{From: "bob", Text: "not for the bot"})
	f2.Post(lobby, mochattest.Message{From: "bob", Text: "marker", Mentions: []string{mochattest.BotID}})
	if m := rec2.Wait(t, "marker"); m.Content != "marker" || len(rec2.All()) != 1 {
		t.Errorf("with the delay off got %+v", rec2.All())
	}
}

// An unknown mode (nanobot treats anything but "non-mention" as off) is
// accepted and means off.
func TestReplyDelayUnknownModeIsOff(t *testing.T) {
	f := newFake(t)
	ch := newChannel(t, f, nil, t.TempDir(), func(c *Config) { c.ReplyDelayMode = "typing" })
	if ch.delay != nil {
		t.Error("an unknown replyDelayMode turned the delay on")
	}
}
