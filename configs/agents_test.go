package configs

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A config in the Python nanobot's shape: presets, a preset picked by the
// defaults, fallbacks of all three kinds, named agents in both spellings.
const nanobotShaped = `{
  "modelPresets": {
    "fast": {"provider": "deepseek", "model": "deepseek-chat", "max_tokens": 2048, "context_window_tokens": 64000, "temperature": 0.3},
    "smart": {"provider": "anthropic", "model": "claude-opus-4-1", "maxTokens": 8192, "contextWindowTokens": 200000, "reasoningEffort": "high"}
  },
  "agents": {
    "defaults": {"modelPreset": "smart", "fallbackModels": ["fast", "gpt-4o-mini", {"provider": "openrouter", "model": "meta/llama-3", "maxTokens": 1000}]},
    "list": [
      {"name": "family", "modelPreset": "fast", "tools": {"deny": ["exec"]}, "presets": ["fast"]},
      {"name": "work", "model": "gpt-4o", "provider": "openai", "workspace": "work-ws", "maxConcurrentTurns": 2}
    ],
    "public": {"modelPreset": "fast", "tools": {"allow": ["web_search"]}, "sessionScope": "per-identity"}
  },
  "bindings": [
    {"agent": "work", "match": {"channel": "slack"}},
    {"agent": "public", "match": {"channel": "telegram", "chatType": "group"}, "modelPreset": "fast", "tools": {"deny": ["web_fetch"]}}
  ],
  "identityLinks": {"alice": ["telegram:123", "slack:U9"]}
}`

func TestNanobotShapedAgentsLoad(t *testing.T) {
	l := load(t, nanobotShaped)
	if len(l.Warnings) != 0 {
		t.Fatalf("warnings: %v", l.Warnings)
	}
	c := &l.Config
	agents := c.AgentList()
	var names []string
	for _, a := range agents {
		names = append(names, a.Name)
	}
	if diff := cmp.Diff([]string{"default", "family", "work", "public"}, names); diff != "" {
		t.Fatalf("agents (-want +got):\n%s", diff)
	}
	def := agents[0].Settings
	if def.Model != "claude-opus-4-1" || def.Provider != "anthropic" || def.MaxTokens != 8192 || def.ReasoningEffort != "high" {
		t.Errorf("default agent with preset smart = %+v", def)
	}
	if def.Temperature != 0.1 {
		t.Errorf("preset without temperature: got %g, want the default 0.1", def.Temperature)
	}
	fam := agents[1]
	if fam.Settings.Model != "deepseek-chat" || fam.Settings.MaxTokens != 2048 || fam.Settings.Temperature != 0.3 {
		t.Errorf("family settings = %+v", fam.Settings)
	}
	if fam.Settings.MaxToolIterations != 40 {
		t.Errorf("family inherits maxToolIterations: got %d", fam.Settings.MaxToolIterations)
	}
	if !cmp.Equal(fam.Tools.Deny, []string{"exec"}) || !cmp.Equal(fam.Presets, []string{"fast"}) {
		t.Errorf("family tools %+v presets %v", fam.Tools, fam.Presets)
	}
	work := agents[2]
	if work.Settings.Model != "gpt-4o" || work.Settings.Provider != "openai" || work.Settings.MaxConcurrentTurns != 2 {
		t.Errorf("work settings = %+v", work.Settings)
	}
	if work.Settings.MaxTokens != 8192 {
		t.Errorf("work's own model does not take the default's preset settings... got maxTokens %d", work.Settings.MaxTokens)
	}
	if got, want := l.Paths.ForAgent(work).Workspace, filepath.Join(l.Paths.Dir, "work-ws"); got != want {
		t.Errorf("work workspace = %q, want %q", got, want)
	}
	if got, want := l.Paths.ForAgent(fam).Workspace, filepath.Join(l.Paths.Dir, "agents", "family", "workspace"); got != want {
		t.Errorf("family workspace = %q, want %q", got, want)
	}
	if got := l.Paths.ForAgent(fam).Sessions; got == l.Paths.Sessions {
		t.Errorf("family shares the default's sessions folder %s", got)
	}
	pub := agents[3]
	if pub.Path != "agents.public" || pub.SessionScope != ScopePerIdentity || !cmp.Equal(pub.Tools.Allow, []string{"web_search"}) {
		t.Errorf("public = %+v", pub)
	}
	fb := def.FallbackModels
	if len(fb) != 3 {
		t.Fatalf("fallbacks = %+v", fb)
	}
	for i, want := range [][2]string{{"deepseek-chat", "deepseek"}, {"gpt-4o-mini", ""}, {"meta/llama-3", "openrouter"}} {
		if m, p := c.Fallback(fb[i]); m != want[0] || p != want[1] {
			t.Errorf("fallback %d = %q %q, want %q %q", i, m, p, want[0], want[1])
		}
	}
	if len(c.Bindings) != 2 || c.Bindings[1].Tools == nil || c.Bindings[1].Match.ChatType != "group" {
		t.Errorf("bindings = %+v", c.Bindings)
	}

	// A save writes a file that loads to the same agents.
	p := filepath.Join(t.TempDir(), "config.json")
	if err := Save(p, c); err != nil {
		t.Fatal(err)
	}
	again, err := Load(Options{Path: p, Environ: []string{}})
	if err != nil {
		t.Fatalf("reload saved config: %v", err)
	}
	if len(again.Warnings) != 0 {
		t.Errorf("saved config warns: %v", again.Warnings)
	}
	if diff := cmp.Diff(agents, again.Config.AgentList()); diff != "" {
		t.Errorf("agents after save (-before +after):\n%s", diff)
	}
}

func TestAgentValidationNamesPaths(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"unknown preset in list", `{"agents": {"list": [{"name": "a"}, {"name": "b", "modelPreset": "x"}]}}`, `agents.list[1].modelPreset: unknown preset "x" (none defined)`},
		{"unknown default preset", `{"modelPresets": {"p": {"model": "m"}}, "agents": {"defaults": {"modelPreset": "q"}}}`, `agents.defaults.modelPreset: unknown preset "q" (known: p)`},
		{"preset without model", `{"modelPresets": {"p": {"provider": "openai"}}}`, `modelPresets.p.model: must not be empty`},
		{"inline fallback without model", `{"agents": {"defaults": {"fallbackModels": [{"provider": "openai"}]}}}`, `agents.defaults.fallbackModels[0].model: must not be empty`},
		{"fallback of wrong type", `{"agents": {"defaults": {"fallbackModels": [3]}}}`, `agents.defaults.fallbackModels[0]: want a preset name, a model name or an object`},
		{"duplicate name", `{"agents": {"list": [{"name": "a"}], "a": {}}}`, `agents.a.name: agent "a" is already defined at agents.list[0]`},
		{"reserved name", `{"agents": {"list": [{"name": "default"}]}}`, `agents.list[0].name: "default" is the agent of agents.defaults`},
		{"bad name", `{"agents": {"list": [{"name": "Work Bot"}]}}`, `agents.list[0].name: want lower-case letters`},
		{"missing name", `{"agents": {"list": [{"model": "m"}]}}`, `agents.list[0].name: must not be empty`},
		{"binding agent", `{"bindings": [{"agent": "ghost", "match": {"channel": "slack"}}]}`, `bindings[0].agent: unknown agent "ghost" (known: default)`},
		{"binding chat type", `{"bindings": [{"agent": "default", "match": {"chatType": "channel"}}]}`, `bindings[0].match.chatType: want one of "dm", "group", got "channel"`},
		{"binding preset", `{"bindings": [{"agent": "default", "modelPreset": "nope"}]}`, `bindings[0].modelPreset: unknown preset "nope"`},
		{"binding queue", `{"bindings": [{"agent": "default", "queue": "later"}]}`, `bindings[0].queue: want one of "queue", "steer", "collect", "interrupt", got "later"`},
		{"queue dm mode", `{"agents": {"defaults": {"queue": {"dmMode": "fifo"}}}}`, `agents.defaults.queue.dmMode: want one of "queue", "steer", "collect", "interrupt", got "fifo"`},
		{"queue collect window", `{"agents": {"defaults": {"queue": {"collectMs": -1}}}}`, `agents.defaults.queue.collectMs: want 0 to 60000 milliseconds, got -1`},
		{"scope", `{"agents": {"defaults": {"sessionScope": "global"}}}`, `agents.defaults.sessionScope: want one of "per-chat", "per-identity"`},
		{"identity link", `{"identityLinks": {"bob": ["telegram"]}}`, `identityLinks.bob[0]: want "channel:senderId"`},
		{"profile type", `{"agents": {"work": {"maxTokens": "lots"}}}`, `agents.work.maxTokens: want integer, got string`},
		{"agent presets", `{"agents": {"list": [{"name": "a", "presets": ["zz"]}]}}`, `agents.list[0].presets[0]: unknown preset "zz"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(Options{Path: writeConfig(t, tt.body), Environ: []string{}})
			if err == nil {
				t.Fatalf("want error containing %q, got nil", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestAgentWarnings(t *testing.T) {
	l := load(t, `{"agents": {"defaults": {"workspace": "ws"}, "list": [{"name": "a", "workspace": "ws", "modle": "x"}]}}`)
	want := []string{
		`agents.list[0].modle: unknown key (ignored); did you mean "model"?`,
		`agents.list[0].workspace: agents "default" and "a" share the workspace "ws" (memory, skills and bootstrap files are shared)`,
	}
	if diff := cmp.Diff(want, l.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}
