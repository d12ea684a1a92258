package memory

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/providers"
)

// TestDream: a dream rewrites MEMORY.md from itself and the end of
// HISTORY.md, keeps the old memory as a version, notes itself in the
// history and follows the owner's instructions once set; a reply that
// would erase memory, or memory edited during the call, changes nothing.
func TestDream(t *testing.T) {
	var reply func(req providers.ChatRequest) (*providers.LLMResponse, error)
	p := &fakeProvider{reply: func(_ context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) { return reply(req) }}
	c := newConsolidator(t, testOptions(t.TempDir(), p, newStore(t, t.TempDir())))
	if changed, err := c.Dream(context.Background()); changed || err != nil || len(p.requests()) != 0 {
		t.Fatalf("dream without memory: %v, %v, %d calls", changed, err, len(p.requests()))
	}
	before := "## People\n- Grace lives in Lyon\n- Grace, Ada's sister, lives in Lyon\n"
	if err := c.files.writeMemory(before); err != nil {
		t.Fatal(err)
	}
	if err := c.files.appendHistory("[2026-02-28 10:00] Ada said Grace moved to Paris."); err != nil {
		t.Fatal(err)
	}
	reply = func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		u := req.Messages[1].Content
		if req.ToolChoice != saveMemoryTool || !strings.Contains(u, "Grace moved to Paris") || !strings.Contains(u, "- Grace lives in Lyon") || !strings.Contains(u, "never invent") {
			t.Errorf("dream request lacks memory, history or instructions:\n%s", u)
		}
		return saveCall("[2026-03-01 12:00] Merged the two lines about Grace; she lives in Paris now.", "## People\n- Grace, Ada's sister, lives in Paris\n"), nil
	}
	changed, err := c.Dream(context.Background())
	if err != nil || !changed {
		t.Fatalf("dream: %v, %v", changed, err)
	}
	if got, _ := c.files.readMemory(); got != "## People\n- Grace, Ada's sister, lives in Paris\n" {
		t.Errorf("MEMORY.md after the dream = %q", got)
	}
	if vs, _ := c.Versions(); len(vs) != 1 {
		t.Errorf("%d versions kept, want the memory before the dream", len(vs))
	}
	if h, _ := os.ReadFile(c.HistoryPath()); !strings.Contains(string(h), "she lives in Paris now. [dream]") {
		t.Errorf("HISTORY.md lacks the dream's note:\n%s", h)
	}

	// The owner's instructions replace the built-in ones.
	if err := c.SetDreamInstructions("Keep only facts about family."); err != nil {
		t.Fatal(err)
	}
	if text, custom := c.DreamInstructions(); !custom || text != "Keep only facts about family." {
		t.Errorf("instructions %q (custom %v)", text, custom)
	}
	reply = func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		if !strings.Contains(req.Messages[1].Content, "Keep only facts about family.") {
			t.Error("the owner's instructions were not sent")
		}
		return saveCall("[2026-03-01 12:05] nothing to change", "## People\n- Grace, Ada's sister, lives in Paris\n"), nil
	}
	if changed, err := c.Dream(context.Background()); changed || err != nil {
		t.Errorf("unchanged dream: %v, %v", changed, err)
	}
	if err := c.SetDreamInstructions(""); err != nil {
		t.Fatal(err)
	}
	if _, custom := c.DreamInstructions(); custom {
		t.Error("reset left the owner's instructions")
	}

	// A reply that would erase memory changes nothing.
	reply = func(providers.ChatRequest) (*providers.LLMResponse, error) {
		return saveCall("[2026-03-01 12:10] cleared", ""), nil
	}
	if _, err := c.Dream(context.Background()); !errors.Is(err, errBadToolCall) {
		t.Errorf("erasing dream: %v", err)
	}
	// Memory edited while the model thinks: the dream gives up.
	reply = func(providers.ChatRequest) (*providers.LLMResponse, error) {
		_ = c.files.writeMemory("## People\n- edited by hand meanwhile\n")
		return saveCall("[2026-03-01 12:15] tidied", "## People\n- tidied\n"), nil
	}
	if _, err := c.Dream(context.Background()); err == nil {
		t.Error("a dream overwrote an edit made during its call")
	}
	if got, _ := c.files.readMemory(); got != "## People\n- edited by hand meanwhile\n" {
		t.Errorf("MEMORY.md = %q, want the hand edit", got)
	}
}
