package agent

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent/memory"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// versioned is a Consolidator with memory versions.
type versioned struct {
	archiveRecorder
	mu       sync.Mutex
	restored []string
}

func (v *versioned) Versions() ([]memory.Version, error) {
	return []memory.Version{{ID: "20261201T100000.000Z", Saved: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), Bytes: 812}}, nil
}

func (v *versioned) Restore(id string) error {
	if id != "20261201T100000.000Z" {
		return memory.ErrNoVersion
	}
	v.mu.Lock()
	v.restored = append(v.restored, id)
	v.mu.Unlock()
	return nil
}

// TestDreamCommands: /dream-log lists the versions; /dream-restore puts
// one back for an admin only, and says so for an unknown version.
func TestDreamCommands(t *testing.T) {
	v := &versioned{archiveRecorder: archiveRecorder{archived: map[string]int{}}}
	h := newHarness(t, &fakeLLM{}, nil, func(c *LoopConfig) { c.Consolidator = v })
	admin := func(text string) {
		h.loop.Submit(context.Background(), bus.Inbound{Channel: "test", ChatID: "admin", SenderID: "boss", Content: text, MessageID: text, Admin: true})
	}
	h.send("guest", "/dream-log")
	h.send("guest", "/dream-restore 20261201T100000.000Z")
	admin("/dream-restore 19990101T000000.000Z")
	admin("/dream-restore 20261201T100000.000Z")
	waitfor.True(t, "four commands", func() bool { return h.doneCount() == 4 })
	f := h.out.finals()
	guest, boss := f["test:guest"], f["test:admin"]
	if !strings.Contains(guest[0], "20261201T100000.000Z — replaced 2026-12-01 10:00 UTC, 812 bytes") {
		t.Errorf("/dream-log:\n%s", guest[0])
	}
	if guest[1] != "Only an admin can restore memory." {
		t.Errorf("guest restore: %q", guest[1])
	}
	if !strings.HasPrefix(boss[0], "No memory version 19990101T000000.000Z") || !strings.HasPrefix(boss[1], "Long-term memory restored to version 20261201T100000.000Z") {
		t.Errorf("admin restores: %q", boss)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.restored) != 1 {
		t.Errorf("restored %v, want the admin's one", v.restored)
	}
}
