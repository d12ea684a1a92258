package webui

import (
	"io"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/gateway/logging"
)

func TestLogsAPI(t *testing.T) {
	ring := logging.NewRing(100)
	log, _, err := logging.New(io.Discard, logging.Options{Level: "debug", Secrets: []string{"sk-secret-in-a-log-line"}, Ring: ring})
	if err != nil {
		t.Fatal(err)
	}
	b := newBench(t, false, true, func(o *Options) { o.Logs = ring; o.Log = log })
	log.Info("calling the provider with sk-secret-in-a-log-line")
	log.Warn("channel reconnecting", "channel", "telegram")
	if code, _, _ := b.do("GET", "/api/logs", "", nil); code != 401 {
		t.Fatalf("logs before login: %d, want 401", code)
	}
	if code, _, _ := b.login(testPassword); code != 200 {
		t.Fatal("login failed")
	}
	code, body, _ := b.do("GET", "/api/logs?level=warn", "", nil)
	if code != 200 {
		t.Fatalf("logs: %d %v", code, body)
	}
	lines := body["lines"].([]any)
	if len(lines) != 1 || !strings.Contains(lines[0].(map[string]any)["text"].(string), "channel reconnecting") {
		t.Errorf("warn lines %v, want the one warning", lines)
	}
	code, body, _ = b.do("GET", "/api/logs?level=debug&n=1000", "", nil)
	if code != 200 || len(body["lines"].([]any)) < 3 { // the two above and the login
		t.Fatalf("all lines: %d %v", code, body)
	}
	for _, l := range body["lines"].([]any) {
		if strings.Contains(l.(map[string]any)["text"].(string), "sk-secret-in-a-log-line") {
			t.Error("a secret reached the log view")
		}
	}
	for q, path := range map[string]string{"level=loud": "level", "n=0": "n", "n=5000": "n"} {
		if code, body, _ := b.do("GET", "/api/logs?"+q, "", nil); code != 400 || body["path"] != path {
			t.Errorf("GET /api/logs?%s: %d %v, want 400 on path %s", q, code, body, path)
		}
	}
}
