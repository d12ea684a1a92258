package configs

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestMigratePythonReportsEveryKey(t *testing.T) {
	in := `{
	  "agents": {"defaults": {"model": "deepseek-chat", "max_tokens": 4096, "unifiedSession": true, "botName": "Kit"}},
	  "providers": {"deepseek": {"api_key": "${DEEPSEEK_API_KEY}", "extraBody": {"thinking": {"type": "disabled"}}},
	                "bedrock": {"region": "us-east-1"}},
	  "tools": {"exec": {"restrictToWorkspace": true}, "web": {"fetch": {"useJinaReader": false}}, "madeUp": 1},
	  "channels": {"telegram": {"enabled": true, "webhookSecretToken": "s3cret", "webhookUrl": "https://x.example/tg"}}
	}`
	m, err := MigratePython([]byte(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]KeyReport{}
	for _, k := range m.Keys {
		got[k.Path] = k
	}
	want := map[string]CompatStatus{
		"agents.defaults.model":                      CompatSame,
		"agents.defaults.max_tokens":                 CompatSame,
		"agents.defaults.unifiedSession":             CompatSame,
		"agents.defaults.botName":                    CompatUnsupported,
		"agents.defaults.workspace":                  CompatSame,
		"providers.deepseek.api_key":                 CompatSame,
		"providers.deepseek.extraBody.thinking.type": CompatSame,
		"providers.bedrock.region":                   CompatSame,
		"tools.exec.restrictToWorkspace":             CompatSame,
		"tools.web.fetch.useJinaReader":              CompatSame,
		"tools.madeUp":                               CompatUnsupported,
		"channels.telegram.enabled":                  CompatSame,
		"channels.telegram.webhookSecretToken":       CompatSame,
		"channels.telegram.webhookUrl":               CompatSame,
	}
	for p, st := range want {
		if got[p].Status != st {
			t.Errorf("%s: status %q (%s), want %q", p, got[p].Status, got[p].Note, st)
		}
	}
	if len(m.Keys) != len(want) {
		t.Errorf("%d keys reported, want %d: %+v", len(m.Keys), len(want), m.Keys)
	}
	for _, p := range []string{"tools.exec.restrictToWorkspace", "channels.telegram.webhookSecretToken", "agents.defaults.botName"} {
		if got[p].Note == "" {
			t.Errorf("%s: no note saying where it went or what happens instead", p)
		}
	}

	var out map[string]any
	if err := json.Unmarshal(m.Output, &out); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]any{
		"providers.deepseek.apiKey":            "${DEEPSEEK_API_KEY}", // reference kept, key respelled
		"agents.defaults.maxTokens":            float64(4096),
		"agents.defaults.workspace":            PythonDefaultWorkspace,
		"tools.restrictToWorkspace":            true,
		"channels.telegram.webhookSecret":      "s3cret",
		"channels.telegram.webhookSecretToken": nil,
		"providers.bedrock.region":             "us-east-1",
		"agents.defaults.botName":              nil,
		"tools.madeUp":                         nil, // unknown here: reported, left out
	} {
		if got := valueAt(out, path); got != want {
			t.Errorf("output %s = %v, want %v", path, got, want)
		}
	}
	if !strings.Contains(m.FormatReport(), "tools.madeUp — no such option here, left out of the migrated file (unknown key (ignored))") {
		t.Errorf("report:\n%s", m.FormatReport())
	}
	if !strings.Contains(m.FormatReport(), "agents.defaults.botName — the CLI prompt name is not configurable") {
		t.Errorf("report:\n%s", m.FormatReport())
	}
}

func TestMigratePythonRefusesBrokenFiles(t *testing.T) {
	for _, in := range []string{`[1]`, `{"agents": {"defaults": {"maxTokens": "many"}}}`, `{"agents":`} {
		if _, err := MigratePython([]byte(in), nil); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}

func TestPythonValuesThatWouldNotValidate(t *testing.T) {
	in := `{"agents": {"defaults": {"model": "m", "reasoningEffort": "xhigh"}},
	  "modelPresets": {"p": {"model": "m", "reasoningEffort": "adaptive"}},
	  "tools": {"exec": {"timeout": 0, "sandbox": ""}, "web": {"search": {"maxResults": 20}}}}`
	m, err := MigratePython([]byte(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	changed := 0
	for _, k := range m.Keys {
		if k.Status == CompatChanged {
			changed++
		}
	}
	if changed != 5 {
		t.Errorf("%d keys change meaning, want 5: %+v", changed, m.Keys)
	}
	var out map[string]any
	json.Unmarshal(m.Output, &out)
	c := Default()
	b, _ := json.Marshal(out)
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	applyEntryDefaults(&c)
	if probs := c.Validate(); len(probs) != 0 {
		t.Errorf("translated values do not validate: %v", probs)
	}
	if c.Agents.Defaults.ReasoningEffort != "high" || c.Tools.Exec.Timeout != 600 || c.Tools.Exec.Sandbox != "auto" || c.Tools.Web.Search.MaxResults != 10 {
		t.Errorf("got effort %q timeout %d sandbox %q maxResults %d", c.Agents.Defaults.ReasoningEffort, c.Tools.Exec.Timeout, c.Tools.Exec.Sandbox, c.Tools.Web.Search.MaxResults)
	}
}

// TestMigratePythonImageGenerationAndNewProviders: tools.imageGeneration
// becomes tools.image (generate_image) with nanobot's defaults, and the
// provider names nanobot knows are carried over as they are.
func TestMigratePythonImageGenerationAndNewProviders(t *testing.T) {
	in := `{
	  "agents": {"defaults": {"provider": "opencodeGo", "model": "opencode-go/kimi-k2.6"}},
	  "providers": {"opencodeGo": {"apiKey": "${OPENCODE_API_KEY}"}, "antLing": {"apiKey": "k"}},
	  "tools": {"imageGeneration": {"enabled": true, "defaultImageSize": "2K"}, "web": {"search": {"provider": "exa", "apiKey": "e"}}}
	}`
	m, err := MigratePython([]byte(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]KeyReport{}
	for _, k := range m.Keys {
		got[k.Path] = k
	}
	for p, st := range map[string]CompatStatus{
		"tools.imageGeneration.enabled":          CompatSame,
		"tools.imageGeneration.defaultImageSize": CompatChanged,
		"providers.opencodeGo.apiKey":            CompatSame,
		"providers.antLing.apiKey":               CompatSame,
		"tools.web.search.provider":              CompatSame,
	} {
		if got[p].Status != st {
			t.Errorf("%s: status %q (%s), want %q", p, got[p].Status, got[p].Note, st)
		}
	}
	var out map[string]any
	if err := json.Unmarshal(m.Output, &out); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]any{
		"tools.image.enabled":       true,
		"tools.image.provider":      "openrouter",
		"tools.image.model":         "openai/gpt-5.4-image-2",
		"tools.imageGeneration":     nil,
		"tools.web.search.provider": "exa",
	} {
		if got := valueAt(out, path); got != want {
			t.Errorf("output %s = %v, want %v", path, got, want)
		}
	}
}

// TestMigratePythonMergesSlackDMAllowFrom: the ids allowed to write to
// the bot directly are merged into allowFrom, not dropped.
func TestMigratePythonMergesSlackDMAllowFrom(t *testing.T) {
	in := `{"channels": {"slack": {"enabled": true, "allowFrom": ["U1"], "dm": {"enabled": true, "policy": "allowlist", "allowFrom": ["U2", "U1"]}}}}`
	m, err := MigratePython([]byte(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[string]CompatStatus{}
	for _, k := range m.Keys {
		statuses[k.Path] = k.Status
	}
	if statuses["channels.slack.dm.allowFrom"] != CompatSame {
		t.Errorf("dm.allowFrom reported %q", statuses["channels.slack.dm.allowFrom"])
	}
	var out map[string]any
	if err := json.Unmarshal(m.Output, &out); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(valueAt(out, "channels.slack.allowFrom"))
	if string(got) != `["U1","U2"]` {
		t.Errorf("allowFrom %s, want U1 and U2 once each", got)
	}
}
