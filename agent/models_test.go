package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

// presetsFor resolves "fast" to fast and "broken" to an unconfigured
// provider.
func presetsFor(fast providers.Provider) Presets {
	return Presets{Names: []string{"fast", "broken"}, Resolve: func(name string) (Model, error) {
		switch name {
		case "fast":
			return Model{Provider: fast, Model: "fast-model", MaxTokens: 77}, nil
		case "broken":
			return Model{}, errors.New(`provider "anthropic" is not configured (no API key)`)
		}
		return Model{}, fmt.Errorf("unknown preset %q", name)
	}}
}

func (h *harness) ask(t *testing.T, m bus.Inbound) string {
	t.Helper()
	before := h.doneCount()
	m.MessageID = fmt.Sprint(time.Now().UnixNano())
	h.loop.Submit(context.Background(), m)
	waitfor.True(t, "reply to "+m.Content, func() bool { return h.doneCount() == before+1 })
	all := h.out.all()
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Final {
			return all[i].Content
		}
	}
	return ""
}

func TestModelSwitchPersistsAndRoutesTheNextTurn(t *testing.T) {
	base := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("from base") }}
	fast := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("from fast") }}
	h := newHarness(t, base, nil, func(c *LoopConfig) { c.Presets = presetsFor(fast) })
	dm := bus.Inbound{Channel: "test", ChatID: "c1", SenderID: "u"}
	ask := func(text string) string { m := dm; m.Content = text; return h.ask(t, m) }

	if got := ask("/model"); !strings.Contains(got, "fast — fast-model") || !strings.Contains(got, "broken (unavailable: provider \"anthropic\" is not configured") {
		t.Errorf("/model listing:\n%s", got)
	}
	if got := ask("hello"); got != "from base" {
		t.Fatalf("before a switch: %q", got)
	}
	if got := ask("/model broken"); !strings.Contains(got, `Cannot switch to "broken": provider "anthropic" is not configured`) {
		t.Errorf("unconfigured preset: %q", got)
	}
	if got := ask("/model nosuch"); !strings.Contains(got, `Unknown preset "nosuch". Available: fast, broken.`) {
		t.Errorf("unknown preset: %q", got)
	}
	if got := ask("/model fast"); !strings.Contains(got, "Switched to fast (fast-model)") {
		t.Errorf("switch: %q", got)
	}
	if got := ask("again"); got != "from fast" {
		t.Fatalf("after the switch: %q", got)
	}
	reqs := fast.reqs()
	last := reqs[len(reqs)-1]
	if last.Model != "fast-model" || last.MaxTokens != 77 {
		t.Errorf("fast request model %q maxTokens %d", last.Model, last.MaxTokens)
	}
	// The history was kept: the switched turn saw the earlier exchange.
	if !strings.Contains(fmt.Sprint(last.Messages), "from base") {
		t.Errorf("history lost on switch: %v", last.Messages)
	}

	// A new store on the same files (a restart) still has the choice.
	store2, err := session.NewFileStore(h.ws+"/sessions", session.FileStoreOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := store2.Load(context.Background(), "test:c1")
	if err != nil || s.Metadata[MetaModelPreset] != "fast" {
		t.Fatalf("after reload metadata = %v (%v)", s.Metadata, err)
	}

	if got := ask("/model reset"); !strings.Contains(got, "Model reset") {
		t.Errorf("reset: %q", got)
	}
	if got := ask("back"); got != "from base" {
		t.Errorf("after reset: %q", got)
	}
}

func TestModelSwitchInGroupNeedsAdmin(t *testing.T) {
	base := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("base") }}
	h := newHarness(t, base, nil, func(c *LoopConfig) { c.Presets = presetsFor(base) })
	g := bus.Inbound{Channel: "test", ChatID: "g", SenderID: "u", IsGroup: true, Content: "/model fast"}
	if got := h.ask(t, g); !strings.Contains(got, "Only an admin") {
		t.Errorf("non-admin switch in a group: %q", got)
	}
	g.Admin = true
	if got := h.ask(t, g); !strings.Contains(got, "Switched to fast") {
		t.Errorf("admin switch: %q", got)
	}
}

func TestNoPresetsConfigured(t *testing.T) {
	base := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("base") }}
	h := newHarness(t, base, nil, nil)
	if got := h.ask(t, bus.Inbound{Channel: "test", ChatID: "c", Content: "/model fast"}); !strings.Contains(got, "No model presets are configured") {
		t.Errorf("got %q", got)
	}
}

func TestBindingPresetAndDeniedTools(t *testing.T) {
	base := &fakeLLM{reply: func(providers.ChatRequest) (*providers.LLMResponse, error) { return text("base") }}
	fast := &fakeLLM{reply: func(req providers.ChatRequest) (*providers.LLMResponse, error) {
		return text(fmt.Sprintf("fast with %d tools", len(req.Tools)))
	}}
	reg := tools.NewRegistry()
	for _, n := range []string{"exec", "read_file"} {
		if err := reg.Register(namedTool(n)); err != nil {
			t.Fatal(err)
		}
	}
	h := newHarness(t, base, reg, func(c *LoopConfig) { c.Presets = presetsFor(fast) })
	got := h.ask(t, bus.Inbound{Channel: "test", ChatID: "pub", Content: "hi", ModelPreset: "fast", DenyTools: []string{"exec"}})
	if got != "fast with 1 tools" {
		t.Errorf("binding preset + deny: %q", got)
	}
	r := fast.reqs()
	if len(r[0].Tools) != 1 || r[0].Tools[0].Name != "read_file" {
		t.Errorf("tools offered: %+v", r[0].Tools)
	}
	// A denied tool the model calls anyway is refused.
	p := NewToolPolicy(reg, nil, []string{"exec"})
	if _, err := p.Execute(context.Background(), "exec", map[string]any{}); err == nil || !strings.Contains(err.Error(), "not available in this chat") {
		t.Errorf("denied exec: %v", err)
	}
	allow := NewToolPolicy(reg, []string{"exec"}, nil)
	if d := allow.Definitions(); len(d) != 1 || d[0].Name != "exec" {
		t.Errorf("allow-list definitions: %+v", d)
	}
}

type namedTool string

func (n namedTool) Name() string               { return string(n) }
func (n namedTool) Description() string        { return "test tool " + string(n) }
func (n namedTool) Parameters() map[string]any { return map[string]any{"type": "object"} }
func (n namedTool) Execute(context.Context, map[string]any) (tools.Result, error) {
	return tools.Result{}, nil
}
