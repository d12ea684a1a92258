package gateway

import (
	"fmt"
	"testing"
	"time"
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
