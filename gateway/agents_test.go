package gateway

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

func TestReplyLimiterCapsAChatPerMinute(t *testing.T) {
	r := &replyLimiter{max: 3, win: map[string]*chatWindow{}}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var got []string
	for i := range 5 {
		ok, warn := r.allow("telegram:1", t0.Add(time.Duration(i)*time.Second))
		got = append(got, fmt.Sprintf("%v/%v", ok, warn))
	}
	want := "[true/false true/false true/false false/true false/false]"
	if fmt.Sprint(got) != want {
		t.Errorf("one chat: got %v, want %s (the first refusal warns once)", got, want)
	}
	if ok, _ := r.allow("telegram:2", t0.Add(5*time.Second)); !ok {
		t.Error("another chat is capped by the first one's count")
	}
	if ok, _ := r.allow("telegram:1", t0.Add(time.Minute)); !ok {
		t.Error("the cap does not end with the minute")
	}
	var off *replyLimiter
	if ok, _ := off.allow("x", t0); !ok {
		t.Error("nil limiter refuses")
	}
	if ok, _ := (&replyLimiter{}).allow("x", t0); !ok {
		t.Error("max 0 (no cap) refuses")
	}
}

func TestReplyLimiterForgetsEndedWindows(t *testing.T) {
	r := &replyLimiter{max: 1, win: map[string]*chatWindow{}}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for i := range 1024 {
		r.allow(fmt.Sprint("chat:", i), t0)
	}
	r.allow("new", t0.Add(2*time.Minute))
	if n := len(r.win); n != 1 {
		t.Errorf("%d windows kept, want 1 (ended ones dropped)", n)
	}
}

func BenchmarkReplyLimiter(b *testing.B) {
	r := &replyLimiter{max: 20, win: map[string]*chatWindow{}}
	now := time.Now()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.allow("telegram:12345", now)
	}
}

// A chat over its reply cap is told once that it is being skipped, the
// skipped messages never reach the model, and other chats go on.
func TestReplyCapTellsTheChatOnce(t *testing.T) {
	fc := newFake("fake")
	cfg := testConfig(map[string][]any{"fake": {"*"}})
	cfg.Agents.Defaults.MaxRepliesPerMinute = 3
	llm := &echoLLM{}
	startGateway(t, cfg, llm, fc)
	for i := range 5 {
		fc.in <- bus.Inbound{Channel: "fake", ChatID: "c1", SenderID: "u1", Content: fmt.Sprint("m", i), MessageID: fmt.Sprint(i)}
	}
	// The fake delivers in order, so once c2 is answered every message of
	// c1 has been screened.
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c2", SenderID: "u2", Content: "other", MessageID: "9"}
	waitfor.True(t, "c2 answered and c1's three replies and notice", func() bool {
		return slices.Contains(fc.texts("c2"), "echo: other") && len(fc.texts("c1")) >= 4
	})
	var echoes, notices int
	for _, s := range fc.texts("c1") {
		switch {
		case strings.HasPrefix(s, "echo: "):
			echoes++
		case strings.Contains(s, "more than 3 messages in a minute"):
			notices++
		default:
			t.Errorf("unexpected message %q", s)
		}
	}
	if echoes != 3 || notices != 1 {
		t.Errorf("c1 got %d replies and %d notices, want 3 and 1: %q", echoes, notices, fc.texts("c1"))
	}
	if n := llm.calls.Load(); n != 4 {
		t.Errorf("model called %d times, want 4 (3 for c1, 1 for c2)", n)
	}
}
