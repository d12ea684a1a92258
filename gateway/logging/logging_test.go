package logging

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestRedaction(t *testing.T) {
	const key = "my-provider-key-1234567"
	var buf bytes.Buffer
	log, _, err := New(&buf, Options{Format: "json", Level: "debug", Secrets: []string{key, "short"}})
	if err != nil {
		t.Fatal(err)
	}
	log.Info("calling with "+key, "err", errors.New("401 for key "+key))
	log.With("api_key", key).Debug("child")
	log.Info("shapes",
		"openai", "sk-abcdefghijklmnopqrstuvwxyz",
		"slack", "xoxb-1234567890-abcdefghij",
		"telegram", "https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0/getMe",
		"url", "https://x.example/search?q=go&api_key=zzzzzzzz&n=1",
		"group", slog.GroupValue(slog.String("inner", key)),
	)
	log.Info("short secrets are not masked", "v", "short")
	out := buf.String()
	for _, leak := range []string{key, "sk-abcdefghijklmnop", "xoxb-1234567890", "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0", "zzzzzzzz"} {
		if strings.Contains(out, leak) {
			t.Errorf("log leaks %q:\n%s", leak, out)
		}
	}
	if !strings.Contains(out, "q=go") || !strings.Contains(out, `"v":"short"`) {
		t.Errorf("redaction removed too much:\n%s", out)
	}
	if got := strings.Count(out, mask); got < 7 {
		t.Errorf("want at least 7 masks, got %d:\n%s", got, out)
	}
}

func TestBadOptions(t *testing.T) {
	if _, _, err := New(&bytes.Buffer{}, Options{Level: "loud"}); err == nil {
		t.Error("want error for unknown level")
	}
	if _, _, err := New(&bytes.Buffer{}, Options{Format: "xml"}); err == nil {
		t.Error("want error for unknown format")
	}
}
