package relay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/bus"
)

// A reply of the gate that cannot be sent (the channel's send fails: the
// user blocked the bot) is logged at warn with the channel, chat and
// sender, and without its text.
func TestGateRepliesThatFailAreLogged(t *testing.T) {
	var logs bytes.Buffer
	store := NewPairingStore(filepath.Join(t.TempDir(), "pairing.json"))
	blocked := errors.New("telegram: send to chat dm99: Forbidden: bot was blocked by the user")
	g := &Gate{
		AllowFrom: map[string][]string{"tg": {"owner"}}, Pairing: store, Next: &recorder{},
		Reply: func(context.Context, bus.Outbound) error { return blocked },
		Log:   slog.New(slog.NewJSONHandler(&logs, nil)),
	}
	ctx := context.Background()
	_ = g.Deliver(ctx, bus.Inbound{Channel: "tg", SenderID: "99|stranger", ChatID: "dm99", Content: "hi"})
	code := store.Pending()[0].Code
	_ = g.Deliver(ctx, bus.Inbound{Channel: "tg", SenderID: "1|owner", ChatID: "dm1", Content: "/pairing approve " + code})

	type entry struct {
		Level, Msg, Reply, Channel, ChatID, Sender, Err string
	}
	var got []entry
	for line := range strings.Lines(logs.String()) {
		var e struct {
			Level   string `json:"level"`
			Msg     string `json:"msg"`
			Reply   string `json:"reply"`
			Channel string `json:"channel"`
			ChatID  string `json:"chat_id"`
			Sender  string `json:"sender"`
			Err     string `json:"err"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if e.Msg == "access: reply not sent" {
			got = append(got, entry(e))
		}
	}
	want := []entry{
		{"WARN", "access: reply not sent", "pairing code", "tg", "dm99", "99|stranger", blocked.Error()},
		{"WARN", "access: reply not sent", "approval notice", "tg", "dm99", "99|stranger", blocked.Error()},
		{"WARN", "access: reply not sent", "pairing approve answer", "tg", "dm1", "1|owner", blocked.Error()},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("failed replies logged (-want +got):\n%s", diff)
	}
	for _, text := range []string{"I only talk to people", "You're approved", "Approved 99|stranger"} {
		if strings.Contains(logs.String(), text) {
			t.Errorf("the log holds a reply's text %q", text)
		}
	}
}
