package gateway

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/gateway/bus"
	"github.com/nanobot-go/nanobot/gateway/journal"
	"github.com/nanobot-go/nanobot/gateway/wal/waltest"
)

// Disk full while a message comes in: the platform is not acknowledged
// (it offers the message again), the sender is told once, /readyz says why
// it is not ready; once space is back the same message is taken and
// answered without a restart, /readyz recovers, and the journal on disk
// reads back intact (the torn writes did not swallow the next record).
func TestDiskFullHoldsMessageTellsSenderOnceAndRecovers(t *testing.T) {
	var disk waltest.Disk
	fc := newFake("fake")
	fc.redeliver = true
	fc.front = make(chan bus.Inbound, 4)
	r := startGatewayOpts(t, testConfig(map[string][]any{"fake": {"*"}}), &echoLLM{}, func(o *Options) { o.StorageOpen = disk.Open }, fc)

	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c1", SenderID: "u", Content: "first", MessageID: "1"}
	waitFor(t, "first reply", func() bool { return len(fc.texts("c1")) == 1 })

	disk.SetFull(true)
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c1", SenderID: "u", Content: "second", MessageID: "2"}
	waitFor(t, "several failed writes", func() bool { return disk.Failures() >= 6 })
	waitFor(t, "the storage notice", func() bool { return len(fc.texts("c1")) == 2 })
	if got := fc.texts("c1")[1]; !strings.Contains(got, "can't store new messages") {
		t.Errorf("notice %q", got)
	}
	code, body := get(t, "http://"+r.addr+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "storage: inbox:") || !strings.Contains(body, "no space left") {
		t.Errorf("/readyz while the disk is full: %d %q", code, body)
	}
	// More attempts of the same message do not repeat the notice.
	n := disk.Failures()
	waitFor(t, "more attempts", func() bool { return disk.Failures() >= n+4 })
	if got := len(fc.texts("c1")); got != 2 {
		t.Errorf("%d messages in the chat, want the first reply and one notice", got)
	}

	disk.SetFull(false)
	waitFor(t, "the held message answered", func() bool { return len(fc.texts("c1")) == 3 })
	if got := fc.texts("c1")[2]; got != "echo: second" {
		t.Errorf("reply %q", got)
	}
	waitFor(t, "/readyz ready again", func() bool { code, _ := get(t, "http://"+r.addr+"/readyz"); return code == http.StatusOK })
	// The platform shows the reply a moment before the outbox records it
	// delivered.
	waitFor(t, "no reply pending", func() bool {
		var st Status
		_, sbody := get(t, "http://"+r.addr+"/api/status")
		return json.Unmarshal([]byte(sbody), &st) == nil && st.PendingReplies == 0
	})
	_, metrics := get(t, "http://"+r.addr+"/metrics")
	if !strings.Contains(metrics, `nanobot_outbox_finished_total{outcome="sent"}`) || !strings.Contains(metrics, "nanobot_outbox_pending 0") {
		t.Errorf("outbox metrics missing:\n%s", grep(metrics, "outbox"))
	}

	// The journal as written reads back with both messages and nothing torn.
	j, _, err := journal.Open(filepath.Join(r.dir, "state", "inbox.jsonl"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := j.Add(bus.Inbound{Channel: "fake", ChatID: "c1", MessageID: "2"}); err != journal.ErrDuplicate {
		t.Errorf("message 2 not in the journal after recovery: %v", err)
	}
}
