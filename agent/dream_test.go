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

// versioned is a Consolidator with memory versions and dreams.
type versioned struct {
	archiveRecorder
	mu           sync.Mutex
	restored     []string
	dreams       int
	instructions string
}

func (v *versioned) Dream(context.Context) (bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.dreams++
	return true, nil
}

func (v *versioned) DreamInstructions() (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.instructions == "" {
		return "built-in text", false
	}
	return v.instructions, true
}

func (v *versioned) SetDreamInstructions(text string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.instructions = text
	return nil
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

// TestDreamNowAndItsPrompt: /dream runs for an admin only; /dream-prompt
// shows the instructions to anyone and changes them for an admin.
func TestDreamNowAndItsPrompt(t *testing.T) {
	v := &versioned{archiveRecorder: archiveRecorder{archived: map[string]int{}}}
	h := newHarness(t, &fakeLLM{}, nil, func(c *LoopConfig) { c.Consolidator = v })
	admin := func(text string) {
		h.loop.Submit(context.Background(), bus.Inbound{Channel: "test", ChatID: "admin", SenderID: "boss", Content: text, MessageID: text, Admin: true})
	}
	h.send("guest", "/dream")
	h.send("guest", "/dream-prompt only family facts")
	h.send("guest", "/dream-prompt")
	// Chats run in parallel: the guest's look at the instructions must
	// come before the admin changes them.
	waitfor.True(t, "the guest's three commands", func() bool { return h.doneCount() == 3 })
	admin("/dream")
	admin("/dream-prompt Keep only family facts.")
	admin("/dream-prompt")
	admin("/dream-prompt reset")
	waitfor.True(t, "seven commands", func() bool { return h.doneCount() == 7 })
	f := h.out.finals()
	guest, boss := f["test:guest"], f["test:admin"]
	if guest[0] != "Only an admin can start a dream." || guest[1] != "Only an admin can change the dream instructions." || !strings.Contains(guest[2], "(built-in):") {
		t.Errorf("guest: %q", guest)
	}
	if !strings.HasPrefix(boss[0], "Memory tidied.") || !strings.HasPrefix(boss[1], "Dream instructions saved") ||
		!strings.Contains(boss[2], "Keep only family facts.") || !strings.HasPrefix(boss[3], "Dream instructions back to the built-in") {
		t.Errorf("admin: %q", boss)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.dreams != 1 || v.instructions != "" {
		t.Errorf("%d dreams, instructions %q; want 1 and reset", v.dreams, v.instructions)
	}
}

// TestDreamEvery: scheduled dreams come each interval and stop with ctx;
// with no interval there are none.
func TestDreamEvery(t *testing.T) {
	v := &versioned{archiveRecorder: archiveRecorder{archived: map[string]int{}}}
	h := newHarness(t, &fakeLLM{}, nil, func(c *LoopConfig) { c.Consolidator = v })
	h.loop.DreamEvery(context.Background(), 0) // returns at once: off
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.loop.DreamEvery(ctx, 5*time.Millisecond); close(done) }()
	waitfor.True(t, "two scheduled dreams", func() bool {
		v.mu.Lock()
		defer v.mu.Unlock()
		return v.dreams >= 2
	})
	cancel()
	<-done
}
