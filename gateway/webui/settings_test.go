package webui

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nanobot-go/nanobot/configs"
)

const (
	literalKey   = "sk-ant-literal-secret-123456"
	envKey       = "sk-from-env-abcdef123456"
	channelToken = "123456:telegram-secret-token"
	newToken     = "654321:brand-new-telegram-token"
)

const startConfig = `{
  "agents": {"defaults": {"model": "anthropic/claude-test"}},
  "providers": {
    "anthropic": {"apiKey": "` + literalKey + `"},
    "openai": {"apiKey": "${TEST_WEBUI_OPENAI_KEY}"}
  },
  "channels": {
    "telegram": {"enabled": true, "token": "` + channelToken + `", "allowFrom": ["111"]}
  },
  "myNotes": {"keep": "this key is unknown to nanobot"}
}
`

func TestSettingsAPI(t *testing.T) {
	t.Setenv("TEST_WEBUI_OPENAI_KEY", envKey)
	dir := t.TempDir()
	file := filepath.Join(dir, "config.json")
	if err := os.WriteFile(file, []byte(startConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var applied []*configs.Config
	b := newBench(t, true, false, func(o *Options) {
		o.ConfigFile = file
		o.Apply = func(c *configs.Config) { mu.Lock(); applied = append(applied, c); mu.Unlock() }
	})
	t.Cleanup(func() {
		for _, body := range b.bodies {
			for _, secret := range []string{literalKey, envKey, channelToken, newToken} {
				if strings.Contains(body, secret) {
					t.Errorf("a response carries a secret: %.200s", body)
				}
			}
		}
	})

	code, body, _ := b.do("GET", "/api/settings", "", nil)
	if code != 200 {
		t.Fatalf("GET /api/settings: %d %v", code, body)
	}
	provs := map[string]map[string]any{}
	for _, p := range body["providers"].([]any) {
		pm := p.(map[string]any)
		provs[pm["name"].(string)] = pm["apiKey"].(map[string]any)
	}
	if provs["anthropic"]["set"] != true || provs["anthropic"]["ref"] != false || provs["openai"]["set"] != true || provs["openai"]["ref"] != true {
		t.Errorf("provider keys %v", provs)
	}
	var tg map[string]any
	for _, c := range body["channels"].([]any) {
		if c.(map[string]any)["name"] == "telegram" {
			tg = c.(map[string]any)
		}
	}
	if tg == nil || tg["enabled"] != true || len(tg["allowFrom"].([]any)) != 1 {
		t.Fatalf("telegram %v", tg)
	}
	if sec := tg["secrets"].([]any); len(sec) != 1 || sec[0].(map[string]any)["key"] != "token" || sec[0].(map[string]any)["set"] != true {
		t.Errorf("telegram secrets %v", sec)
	}

	patch := func(changes string, hdr map[string]string) (int, map[string]any) {
		code, body, _ := b.do("PATCH", "/api/settings", `{"changes":`+changes+`}`, hdr)
		return code, body
	}
	if code, _ := patch(`[{"path":"channels.telegram.allowFrom","value":["111","222"]}]`, nil); code != 403 {
		t.Fatalf("PATCH without CSRF: %d, want 403", code)
	}
	hdr := map[string]string{"X-CSRF-Token": b.csrf()}
	unchanged := func(what string) {
		t.Helper()
		got, _ := os.ReadFile(file)
		if string(got) != startConfig {
			t.Fatalf("%s changed config.json:\n%s", what, got)
		}
	}
	for _, tc := range []struct{ changes, path string }{
		{`[{"path":"gateway.host","value":"0.0.0.0"}]`, "gateway.host"},
		{`[{"path":"channels.telegram.enabled","value":"yes"}]`, "channels.telegram.enabled"},
		{`[{"path":"channels.telegram.allowFrom","value":"111"}]`, "channels.telegram.allowFrom"},
		{`[{"path":"gateway.heartbeat.enabled","value":true},{"path":"gateway.heartbeat.intervalS","value":5}]`, "gateway.heartbeat.intervalS"},
		{`[{"path":"tools.exec.sandbox","value":"chroot"}]`, "tools.exec.sandbox"},
	} {
		code, body := patch(tc.changes, hdr)
		if code != 400 || body["path"] != tc.path {
			t.Errorf("PATCH %s: %d %v, want 400 on path %s", tc.changes, code, body, tc.path)
		}
		unchanged("a refused edit")
	}

	code, body = patch(`[{"path":"channels.telegram.allowFrom","value":["111"," 222 "]},{"path":"channels.telegram.token","value":"`+newToken+`"},{"path":"agents.defaults.model","value":"anthropic/claude-next"}]`, hdr)
	if code != 200 {
		t.Fatalf("PATCH: %d %v", code, body)
	}
	if got := body["applied"].([]any); len(got) != 1 || got[0] != "channels.telegram.allowFrom" {
		t.Errorf("applied %v, want the allowFrom", got)
	}
	if got := body["restartNeeded"].([]any); len(got) != 2 {
		t.Errorf("restartNeeded %v, want the token and the model", got)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var tree map[string]any
	if err := json.Unmarshal(raw, &tree); err != nil {
		t.Fatal(err)
	}
	if got := tree["providers"].(map[string]any)["openai"].(map[string]any)["apiKey"]; got != "${TEST_WEBUI_OPENAI_KEY}" {
		t.Errorf("the ${VAR} reference became %v", got)
	}
	if tree["myNotes"].(map[string]any)["keep"] != "this key is unknown to nanobot" {
		t.Error("the unknown key was lost")
	}
	tgFile := tree["channels"].(map[string]any)["telegram"].(map[string]any)
	if !slices.Equal(toStrings(tgFile["allowFrom"]), []string{"111", "222"}) || tgFile["token"] != newToken {
		t.Errorf("telegram in the file: %v", tgFile)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("config.json mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	if bak, err := os.ReadFile(file + ".bak"); err != nil || string(bak) != startConfig {
		t.Errorf("config.json.bak = %q (%v), want the previous file", bak, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(applied) != 1 || !slices.Equal(applied[0].Channels.Common("telegram").AllowFrom, []string{"111", "222"}) {
		t.Errorf("applied %d configs, want one allowing 111 and 222", len(applied))
	}
}

func toStrings(v any) []string {
	var out []string
	for _, e := range v.([]any) {
		out = append(out, e.(string))
	}
	return out
}

// tgSettings stands for Telegram's typed config, so the load checks its
// keys as the gateway's does.
type tgSettings struct {
	configs.ChannelCommon
	Token string `json:"token"`
}

// TestSettingsRefuseUnknownNamesAndKeys: a path whose name is "*" (or any
// name the schema does not know) is refused, not written where nothing
// reads it; nothing changes on disk.
func TestSettingsRefuseUnknownNamesAndKeys(t *testing.T) {
	t.Setenv("TEST_WEBUI_OPENAI_KEY", envKey)
	dir := t.TempDir()
	file := filepath.Join(dir, "config.json")
	if err := os.WriteFile(file, []byte(startConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	b := newBench(t, true, false, func(o *Options) {
		o.ConfigFile = file
		o.Platforms = map[string]any{"telegram": tgSettings{}}
	})
	tok := b.csrf()
	for _, c := range []struct{ path, value string }{
		{"channels.*.allowFrom", `["*"]`},
		{"channels.*.enabled", `true`},
		{"providers.*.apiBase", `"http://attacker.example"`},
		{"channels.nosuchchannel.enabled", `true`},
		{"channels.telegram.webhookSecret", `"a-secret-the-schema-lacks"`},
		{"channels.tele gram.allowFrom", `["1"]`},
		{"channels..allowFrom", `["1"]`},
	} {
		body := `{"changes":[{"path":"` + c.path + `","value":` + c.value + `}]}`
		code, resp, _ := b.do("PATCH", "/api/settings", body, map[string]string{"X-CSRF-Token": tok})
		if code != 400 {
			t.Errorf("PATCH %s: %d %v, want 400", c.path, code, resp)
		}
	}
	got, err := os.ReadFile(file)
	if err != nil || string(got) != startConfig {
		t.Errorf("the config file changed after refused edits (%v):\n%s", err, got)
	}
	// A known name still saves.
	code, resp, _ := b.do("PATCH", "/api/settings", `{"changes":[{"path":"channels.telegram.allowFrom","value":["222"]}]}`, map[string]string{"X-CSRF-Token": tok})
	if code != 200 {
		t.Errorf("a known channel's allowFrom: %d %v", code, resp)
	}
}

// TestSettingsSecretFromEnvironment: a secret typed as $NAME or ${NAME} is
// saved as the ${NAME} reference and shown as set from the environment,
// as the setup page saves it; a variable the gateway's environment lacks
// is refused on the field, named, and the file stays as it was.
func TestSettingsSecretFromEnvironment(t *testing.T) {
	t.Setenv("TEST_WEBUI_OPENAI_KEY", envKey)
	t.Setenv("TEST_WEBUI_SET_KEY", "sk-set-in-the-environment-123")
	os.Unsetenv("TEST_WEBUI_UNSET_KEY")
	file := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(file, []byte(startConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	b := newBench(t, true, false, func(o *Options) { o.ConfigFile = file })
	hdr := map[string]string{"X-CSRF-Token": b.csrf()}
	patch := func(path, value string) (int, map[string]any) {
		t.Helper()
		v, _ := json.Marshal(value)
		code, body, _ := b.do("PATCH", "/api/settings", `{"changes":[{"path":"`+path+`","value":`+string(v)+`}]}`, hdr)
		return code, body
	}
	saved := func(keys ...string) any {
		t.Helper()
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var cur any
		if err := json.Unmarshal(raw, &cur); err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			cur = cur.(map[string]any)[k]
		}
		return cur
	}

	for _, tc := range []struct{ name, path, typed string }{
		{"a provider key as $NAME", "providers.anthropic.apiKey", "$TEST_WEBUI_SET_KEY"},
		{"a provider key as ${NAME}", "providers.openai.apiKey", "${TEST_WEBUI_SET_KEY}"},
		{"a channel token as $NAME", "channels.telegram.token", " $TEST_WEBUI_SET_KEY "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := patch(tc.path, tc.typed); code != 200 {
				t.Fatalf("PATCH %s = %q: %d %v", tc.path, tc.typed, code, body)
			}
			if got := saved(strings.Split(tc.path, ".")...); got != "${TEST_WEBUI_SET_KEY}" {
				t.Errorf("saved %v, want the reference ${TEST_WEBUI_SET_KEY}", got)
			}
		})
	}
	code, body, _ := b.do("GET", "/api/settings", "", nil)
	if code != 200 {
		t.Fatalf("GET /api/settings: %d %v", code, body)
	}
	for _, p := range body["providers"].([]any) {
		if k := p.(map[string]any)["apiKey"].(map[string]any); k["set"] != true || k["ref"] != true {
			t.Errorf("%v: apiKey %v, want set from the environment", p.(map[string]any)["name"], k)
		}
	}

	before, _ := os.ReadFile(file)
	for _, typed := range []string{"$TEST_WEBUI_UNSET_KEY", "${TEST_WEBUI_UNSET_KEY}"} {
		code, body := patch("providers.anthropic.apiKey", typed)
		if code != 400 || body["path"] != "providers.anthropic.apiKey" || body["error"] != "TEST_WEBUI_UNSET_KEY is not set in the gateway's environment" {
			t.Errorf("PATCH %q with the variable unset: %d %v, want 400 naming the variable on the field", typed, code, body)
		}
	}
	if after, _ := os.ReadFile(file); string(after) != string(before) {
		t.Errorf("a refused reference changed config.json:\n%s", after)
	}
}
