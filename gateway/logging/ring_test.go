package logging

import (
	"io"
	"log/slog"
	"strings"
	"testing"
)

func TestRingAfterRedaction(t *testing.T) {
	ring := NewRing(3)
	log, _, err := New(io.Discard, Options{Level: "debug", Secrets: []string{"sk-very-secret-key"}, Ring: ring})
	if err != nil {
		t.Fatal(err)
	}
	log.Debug("starting")
	log.With("component", "webui").Info("calling with sk-very-secret-key", "token", "abc123456789")
	log.Warn("slow", "ms", 900)
	log.Error("failed", "err", "boom")

	all := ring.Lines(slog.LevelDebug, 10)
	if len(all) != 3 || !strings.Contains(all[0].Text, "calling") || !strings.Contains(all[2].Text, "failed") {
		t.Fatalf("lines = %+v, want the last 3, oldest first", all)
	}
	for _, l := range all {
		if strings.Contains(l.Text, "sk-very-secret-key") || strings.Contains(l.Text, "abc123456789") {
			t.Errorf("a secret reached the ring: %s", l.Text)
		}
	}
	if !strings.Contains(all[0].Text, "component=webui") {
		t.Errorf("the logger's attributes are missing: %s", all[0].Text)
	}
	warn := ring.Lines(slog.LevelWarn, 10)
	if len(warn) != 2 || warn[0].Level != "WARN" || warn[1].Level != "ERROR" {
		t.Errorf("warn and up = %+v", warn)
	}
	if got := ring.Lines(slog.LevelDebug, 1); len(got) != 1 || !strings.Contains(got[0].Text, "failed") {
		t.Errorf("newest 1 = %+v", got)
	}
}
