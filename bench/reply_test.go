package main

import (
	"strings"
	"testing"
)

// TestReplySmoke runs the reply section in its quick mode against the
// -race build: a message waiting in Telegram before each start is
// answered after the restart, and warm messages one at a time, with every
// figure filled in.
func TestReplySmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts the real binary; skipped with -short")
	}
	work := t.TempDir()
	bin := raceBinary(t, work)
	fx := startFakes()
	defer fx.close()
	r := &report{}
	if err := measureReply(r, fx, bin, "", work, true); err != nil {
		t.Fatal(err)
	}
	if len(r.Reply) != 1 {
		t.Fatalf("%d columns, want ours only", len(r.Reply))
	}
	f := r.Reply[0]
	if f.SpawnMin <= 0 || f.ToFirstCall <= 0 || f.ToFirstCall > f.SpawnMedian || f.PollToSend <= 0 || f.WarmMedian <= 0 || f.WarmP99 < f.WarmMedian || f.RSS <= 0 || f.AnonRSS <= 0 {
		t.Errorf("figures missing or inconsistent: %+v", f)
	}
	var b strings.Builder
	r.replyMarkdown(func(format string, a ...any) { b.WriteString(strings.TrimSpace(format)) })
	if !strings.Contains(b.String(), "first reply") {
		t.Errorf("no table written:\n%s", b.String())
	}
}
