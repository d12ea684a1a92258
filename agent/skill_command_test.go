package agent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/nanobot-go/nanobot/agent/skills"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// TestSkillCommand: /skill lists and shows skills to anyone; enable and
// disable are for admins, are saved through SwitchSkill, and change what
// the loader gives the prompt.
func TestSkillCommand(t *testing.T) {
	ws := t.TempDir()
	dir := filepath.Join(ws, "skills", "weather")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\ndescription: Forecasts\n---\n\nAsk the sky.\n"), 0o644)
	loader := skills.New(skills.Options{Workspace: ws, Builtin: fstest.MapFS{}})
	var mu sync.Mutex
	var saved []string
	h := newHarness(t, &fakeLLM{}, nil, func(c *LoopConfig) {
		c.Skills = loader
		c.SwitchSkill = func(name string, disabled bool) ([]string, error) {
			mu.Lock()
			defer mu.Unlock()
			saved = slices.DeleteFunc(saved, func(s string) bool { return s == name })
			if disabled {
				saved = append(saved, name)
			}
			return slices.Clone(saved), nil
		}
	})
	admin := func(text string) {
		h.loop.Submit(context.Background(), bus.Inbound{Channel: "test", ChatID: "admin", SenderID: "boss", Content: text, MessageID: text, Admin: true})
	}
	h.send("guest", "/skill")
	h.send("guest", "/skill show weather")
	h.send("guest", "/skill disable weather")
	waitfor.True(t, "three guest commands", func() bool { return h.doneCount() == 3 })
	if len(loader.Skills()) != 1 {
		t.Fatalf("a guest's /skill disable changed the skills: %v", loader.Skills())
	}
	admin("/skill disable weather")
	waitfor.True(t, "the admin's disable", func() bool { return h.doneCount() == 4 })
	if len(loader.Skills()) != 0 {
		t.Errorf("after /skill disable the prompt still gets %v", loader.Skills())
	}
	admin("/skill list")
	admin("/skill enable weather")
	waitfor.True(t, "six commands", func() bool { return h.doneCount() == 6 })
	if len(loader.Skills()) != 1 {
		t.Errorf("after /skill enable: got %v", loader.Skills())
	}

	f := h.out.finals()
	guest, boss := f["test:guest"], f["test:admin"]
	if !strings.Contains(guest[0], "weather (workspace): Forecasts") || !strings.Contains(guest[1], "Ask the sky.") ||
		guest[2] != "Only an admin can switch skills on or off." {
		t.Errorf("guest: %q", guest)
	}
	if !strings.HasPrefix(boss[0], "Skill weather disabled") || !strings.Contains(boss[1], "off: disabled") || !strings.HasPrefix(boss[2], "Skill weather enabled") {
		t.Errorf("admin: %q", boss)
	}
}
