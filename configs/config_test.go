package configs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeConfig writes body as config.json in a fresh folder.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func load(t *testing.T, body string, env ...string) *Loaded {
	t.Helper()
	l, err := Load(Options{Path: writeConfig(t, body), Environ: env})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return l
}

func TestDefaultsWithoutFile(t *testing.T) {
	dir := t.TempDir()
	l, err := Load(Options{Path: filepath.Join(dir, "config.json"), Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if l.Exists {
		t.Error("Exists: want false")
	}
	if diff := cmp.Diff(Default(), l.Config); diff != "" {
		t.Errorf("config differs from Default() (-want +got):\n%s", diff)
	}
	if got, want := l.Paths.Workspace, filepath.Join(dir, "workspace"); got != want {
		t.Errorf("workspace %q, want %q", got, want)
	}
	if got, want := l.Paths.Sessions, filepath.Join(dir, "sessions"); got != want {
		t.Errorf("sessions %q, want %q", got, want)
	}
	if d := Default(); len(d.Validate()) != 0 {
		probs := d.Validate()
		t.Errorf("defaults do not validate: %v", probs)
	}
}

func TestExampleConfigLoads(t *testing.T) {
	l, err := Load(Options{Path: writeConfig(t, string(Example)), Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Warnings) != 0 {
		t.Errorf("example config warns: %v", l.Warnings)
	}
}

func TestFileValues(t *testing.T) {
	l := load(t, `{
	  "agents": {"defaults": {"model": "deepseek-chat", "maxTokens": 1000, "temperature": 0.7, "workspace": "ws"}},
	  "providers": {"deepseek": {"apiKey": "k-123456", "extraHeaders": {"X-A": "b"}}},
	  "channels": {"sendProgress": false, "telegram": {"enabled": true, "allowFrom": ["42"], "token": "t"}},
	  "gateway": {"port": 9999, "heartbeat": {"intervalS": 60}},
	  "tools": {"exec": {"timeout": 30}, "message": {"allowAnyTarget": true}, "mcpServers": {"fs": {"command": "npx", "args": ["-y", "x"]}}}
	}`)
	c := l.Config
	d := c.Agents.Defaults
	if d.Model != "deepseek-chat" || d.MaxTokens != 1000 || d.Temperature != 0.7 {
		t.Errorf("agents.defaults = %+v", d)
	}
	if d.MaxToolIterations != 40 {
		t.Errorf("unset maxToolIterations = %d, want default 40", d.MaxToolIterations)
	}
	if got := c.Providers["deepseek"]; got.APIKey != "k-123456" || got.ExtraHeaders["X-A"] != "b" {
		t.Errorf("providers.deepseek = %+v", got)
	}
	if c.Channels.SendProgress || !c.Channels.SendToolHints {
		t.Errorf("channels shared = %+v", c.Channels)
	}
	if cmn := c.Channels.Common("telegram"); !cmn.Enabled || !cmp.Equal(cmn.AllowFrom, []string{"42"}) {
		t.Errorf("telegram common = %+v", cmn)
	}
	if got := c.Channels.Enabled(); !cmp.Equal(got, []string{"telegram"}) {
		t.Errorf("enabled = %v", got)
	}
	if c.Gateway.Port != 9999 || c.Gateway.Host != "127.0.0.1" || c.Gateway.Heartbeat.IntervalS != 60 || !c.Gateway.Heartbeat.Enabled {
		t.Errorf("gateway = %+v", c.Gateway)
	}
	if !c.Tools.Message.AllowAnyTarget || Default().Tools.Message.AllowAnyTarget {
		t.Errorf("tools.message.allowAnyTarget = %v (default %v), want true (default false)", c.Tools.Message.AllowAnyTarget, Default().Tools.Message.AllowAnyTarget)
	}
	fs := c.Tools.MCPServers["fs"]
	if fs.Type != "stdio" || fs.ToolTimeout != 30 || !cmp.Equal(fs.EnabledTools, []string{"*"}) {
		t.Errorf("mcp server defaults not applied: %+v", fs)
	}
	if got, want := l.Paths.Workspace, filepath.Join(filepath.Dir(l.Path), "ws"); got != want {
		t.Errorf("relative workspace = %q, want %q", got, want)
	}
}

func TestSnakeCaseKeysAccepted(t *testing.T) {
	l := load(t, `{"agents": {"defaults": {"max_tokens": 123, "context_window_tokens": 4000}}, "providers": {"openai": {"api_key": "abcdefg"}}}`)
	if l.Config.Agents.Defaults.MaxTokens != 123 || l.Config.Agents.Defaults.ContextWindowTokens != 4000 {
		t.Errorf("snake_case not applied: %+v", l.Config.Agents.Defaults)
	}
	if l.Config.Providers["openai"].APIKey != "abcdefg" {
		t.Errorf("api_key not applied")
	}
	if len(l.Warnings) != 0 {
		t.Errorf("warnings for accepted spelling: %v", l.Warnings)
	}
}

type fakeTelegram struct {
	ChannelCommon
	Token       string `json:"token"`
	GroupPolicy string `json:"groupPolicy"`
}

func TestEnvOverrides(t *testing.T) {
	body := `{"agents": {"defaults": {"model": "from-file"}}, "providers": {"openrouter": {"apiKey": "file"}}}`
	env := []string{
		"NANOBOT_AGENTS__DEFAULTS__MODEL=gpt-4o",
		"NANOBOT_AGENTS__DEFAULTS__MAXTOKENS=2048",
		"NANOBOT_AGENTS__DEFAULTS__TEMPERATURE=0.5",
		"NANOBOT_PROVIDERS__OPENROUTER__APIKEY=sk-or-env",
		"NANOBOT_PROVIDERS__LM_STUDIO__API_BASE=http://127.0.0.1:1234/v1",
		"NANOBOT_GATEWAY__HEARTBEAT__ENABLED=false",
		"NANOBOT_TOOLS__EXEC__DENYPATTERNS=foo,bar",
		"NANOBOT_CHANNELS__TELEGRAM__TOKEN=tok",
		"NANOBOT_CHANNELS__TELEGRAM__GROUPPOLICY=open",
		"NANOBOT_CHANNELS__TELEGRAM__ALLOWFROM=[\"1\",\"2\"]",
		"NANOBOT_CONFIG=/ignored/not/a/key",
		"NANOBOT_AGENTS__DEFAULTS__NOPE=1",
	}
	l, err := Load(Options{Path: writeConfig(t, body), Environ: env, Platforms: map[string]any{"telegram": fakeTelegram{}}})
	if err != nil {
		t.Fatal(err)
	}
	c := l.Config
	d := c.Agents.Defaults
	if d.Model != "gpt-4o" || d.MaxTokens != 2048 || d.Temperature != 0.5 {
		t.Errorf("env not applied to agents.defaults: %+v", d)
	}
	if c.Providers["openrouter"].APIKey != "sk-or-env" {
		t.Errorf("providers.openrouter.apiKey = %q", c.Providers["openrouter"].APIKey)
	}
	if c.Providers["lm_studio"].APIBase != "http://127.0.0.1:1234/v1" {
		t.Errorf("providers.lm_studio = %+v", c.Providers["lm_studio"])
	}
	if c.Gateway.Heartbeat.Enabled {
		t.Error("heartbeat.enabled: want false from env")
	}
	if !cmp.Equal(c.Tools.Exec.DenyPatterns, []string{"foo", "bar"}) {
		t.Errorf("denyPatterns = %v", c.Tools.Exec.DenyPatterns)
	}
	var tg fakeTelegram
	if err := c.Channels.Decode("telegram", &tg); err != nil {
		t.Fatal(err)
	}
	if tg.Token != "tok" || tg.GroupPolicy != "open" || !cmp.Equal(tg.AllowFrom, []string{"1", "2"}) {
		t.Errorf("telegram from env = %+v", tg)
	}
	if len(l.Warnings) != 1 || !strings.Contains(l.Warnings[0], "NANOBOT_AGENTS__DEFAULTS__NOPE") {
		t.Errorf("warnings = %v, want one for the unknown variable", l.Warnings)
	}
}

func TestOverridesWinOverEnv(t *testing.T) {
	l, err := Load(Options{
		Path:      writeConfig(t, `{"gateway": {"port": 1}}`),
		Environ:   []string{"NANOBOT_GATEWAY__PORT=2"},
		Overrides: map[string]any{"gateway.port": 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	if l.Config.Gateway.Port != 3 {
		t.Errorf("port = %d, want 3 (flags > env > file)", l.Config.Gateway.Port)
	}
}

func TestEnvExpansion(t *testing.T) {
	body := `{"providers": {"anthropic": {"apiKey": "${ANTHROPIC_KEY}", "apiBase": "https://${HOST}/v1"},
	  "openai": {"apiKey": "${UNSET_KEY:-}"}, "groq": {"apiKey": "${UNSET_KEY:-fallback-value}"}},
	  "agents": {"defaults": {"model": "$${LITERAL}"}}}`
	l := load(t, body, "ANTHROPIC_KEY=sk-ant-secret-value", "HOST=llm.internal")
	p := l.Config.Providers
	if p["anthropic"].APIKey != "sk-ant-secret-value" || p["anthropic"].APIBase != "https://llm.internal/v1" {
		t.Errorf("expansion: %+v", p["anthropic"])
	}
	if p["openai"].APIKey != "" || p["groq"].APIKey != "fallback-value" {
		t.Errorf("fallbacks: openai %q groq %q", p["openai"].APIKey, p["groq"].APIKey)
	}
	if got := l.Config.Agents.Defaults.Model; got != "${LITERAL}" {
		t.Errorf("escaped reference = %q", got)
	}

	// Saving writes the references back, never the secret.
	l.Config.Gateway.Port = 12345
	if err := l.Save(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(l.Path)
	if strings.Contains(string(b), "sk-ant-secret-value") {
		t.Fatalf("saved file contains the expanded secret:\n%s", b)
	}
	for _, want := range []string{`"${ANTHROPIC_KEY}"`, `"https://${HOST}/v1"`, `12345`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("saved file lacks %s:\n%s", want, b)
		}
	}

	_, err := Load(Options{Path: writeConfig(t, `{"providers": {"x": {"apiKey": "${MISSING}"}}}`), Environ: []string{}})
	if err == nil || !strings.Contains(err.Error(), "providers.x.apiKey: environment variable MISSING is not set") {
		t.Errorf("missing variable: got %v", err)
	}
}

func TestMigration(t *testing.T) {
	path := writeConfig(t, `{"tools": {"exec": {"restrictToWorkspace": false, "timeout": 10}}, "heartbeat": {"intervalS": 120}}`)
	before, _ := os.ReadFile(path)
	l, err := Load(Options{Path: path, Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if l.Config.Tools.RestrictToWorkspace {
		t.Error("tools.restrictToWorkspace: want false migrated from tools.exec")
	}
	if l.Config.Gateway.Heartbeat.IntervalS != 120 {
		t.Errorf("heartbeat not migrated: %+v", l.Config.Gateway.Heartbeat)
	}
	if len(l.Migrated) != 2 || len(l.Warnings) != 0 {
		t.Errorf("migrated %v, warnings %v", l.Migrated, l.Warnings)
	}
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Error("loading rewrote the file; migrations must stay in memory until saved")
	}
	if err := l.Save(); err != nil {
		t.Fatal(err)
	}
	l2, err := Load(Options{Path: path, Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(l2.Migrated) != 0 || l2.Config.Tools.RestrictToWorkspace || l2.Config.Tools.Exec.Timeout != 10 {
		t.Errorf("after save: migrated %v, config %+v", l2.Migrated, l2.Config.Tools)
	}
}

func TestValidationErrorsNamePaths(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"bad json", `{"agents": `, "invalid JSON at line 1"},
		{"not an object", `[1]`, "want a JSON object at the top level, got array"},
		{"string list item", `{"channels": {"telegram": {"allowFrom": ["a", 1]}}}`, "channels.telegram.allowFrom[1]: want string, got number"},
		{"int field", `{"agents": {"defaults": {"maxTokens": "many"}}}`, "agents.defaults.maxTokens: want integer, got string"},
		{"fractional int", `{"gateway": {"port": 80.5}}`, "gateway.port: want integer, got number"},
		{"bool field", `{"tools": {"restrictToWorkspace": "yes"}}`, "tools.restrictToWorkspace: want boolean, got string"},
		{"message targets", `{"tools": {"message": {"allowAnyTarget": "yes"}}}`, "tools.message.allowAnyTarget: want boolean, got string"},
		{"object field", `{"providers": {"openai": "key"}}`, "providers.openai: want object, got string"},
		{"channel not object", `{"channels": {"slack": true}}`, "channels.slack: want object, got boolean"},
		{"enum", `{"tools": {"exec": {"sandbox": "docker"}}}`, `tools.exec.sandbox: want one of "auto", "landlock", "bwrap", "none", got "docker"`},
		{"range", `{"gateway": {"port": 70000}}`, "gateway.port: want 1 to 65535, got 70000"},
		{"timezone", `{"agents": {"defaults": {"timezone": "Mars/Base"}}}`, `agents.defaults.timezone: unknown timezone "Mars/Base"`},
		{"temperature", `{"agents": {"defaults": {"temperature": 3}}}`, "agents.defaults.temperature: want 0 to 2, got 3"},
		{"regex", `{"tools": {"exec": {"denyPatterns": ["ok", "(["]}}}`, "tools.exec.denyPatterns[1]: invalid regular expression"},
		{"exec sessions", `{"tools": {"exec": {"sessions": {"maxSessions": 0}}}}`, "tools.exec.sessions.maxSessions: want 1 to 64, got 0"},
		{"exec session output", `{"tools": {"exec": {"sessions": {"maxOutputChars": 10}}}}`, "tools.exec.sessions.maxOutputChars: want 1000 to 1000000 characters, got 10"},
		{"cidr", `{"tools": {"ssrfAllowlist": ["10.0.0.0/8", "lan"]}}`, `tools.ssrfAllowlist[1]: want a CIDR`},
		{"mcp", `{"tools": {"mcpServers": {"x": {"args": []}}}}`, "tools.mcpServers.x: needs a command"},
		{"api", `{"providers": {"openai": {"api": "graphql"}}}`, `providers.openai.api: want "chat" or "responses", got "graphql"`},
		{"apiType", `{"providers": {"openai": {"apiType": "soap"}}}`, `providers.openai.apiType: want "chat" or "responses", got "soap"`},
		{"api base", `{"providers": {"vllm": {"apiBase": "localhost:8000"}}}`, `providers.vllm.apiBase: want an http:// or https:// URL`},
		{"tokens", `{"agents": {"defaults": {"maxTokens": 9000, "contextWindowTokens": 8000}}}`, "agents.defaults.maxTokens: must be smaller than contextWindowTokens"},
		{"env type", ``, "NANOBOT_GATEWAY__PORT: want integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, tt.body)
			env := []string{}
			if tt.name == "env type" {
				env = []string{"NANOBOT_GATEWAY__PORT=eighty"}
			}
			_, err := Load(Options{Path: path, Environ: env})
			if err == nil {
				t.Fatalf("want error containing %q, got nil", tt.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) {
				t.Errorf("error %q\nwant it to contain %q", msg, tt.want)
			}
			if !strings.HasPrefix(msg, "config "+path+": ") {
				t.Errorf("error %q does not name the file first", msg)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
		})
	}
}

func TestAllErrorsReported(t *testing.T) {
	_, err := Load(Options{Path: writeConfig(t, `{"gateway": {"port": "x", "host": 1}, "log": {"level": true}}`), Environ: []string{}})
	var ce *Error
	if !asError(err, &ce) {
		t.Fatalf("want *Error, got %T %v", err, err)
	}
	if len(ce.Problems) != 3 {
		t.Errorf("want 3 problems, got %v", ce.Problems)
	}
}

func asError(err error, target **Error) bool {
	e, ok := err.(*Error)
	if ok {
		*target = e
	}
	return ok
}

func TestUnknownKeysWarn(t *testing.T) {
	l := load(t, `{"agents": {"defaults": {"modle": "x"}}, "gatway": {}, "tools": {"exec": {"timeout": 5, "colour": 1}}}`)
	want := []string{
		`agents.defaults.modle: unknown key (ignored); did you mean "model"?`,
		`gatway: unknown key (ignored); did you mean "gateway"?`,
		`tools.exec.colour: unknown key (ignored)`,
	}
	if diff := cmp.Diff(want, l.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	// Unknown platform keys warn only when the platform's type is known.
	l2, err := Load(Options{Path: writeConfig(t, `{"channels": {"telegram": {"tokn": "x"}, "nosuch": {}}}`), Environ: []string{}, Platforms: map[string]any{"telegram": fakeTelegram{}}})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{`channels.nosuch: unknown channel (ignored)`, `channels.telegram.tokn: unknown key (ignored); did you mean "token"?`}
	if diff := cmp.Diff(want, l2.Warnings); diff != "" {
		t.Errorf("platform warnings (-want +got):\n%s", diff)
	}
}

// A platform the binary was built without is named as such, its own keys
// (typed in a build that has it) pass unchecked, and its environment
// variables still land in the tree as plain values.
func TestNotBuiltPlatformWarns(t *testing.T) {
	platforms := map[string]any{"telegram": fakeTelegram{}, "whatsapp": NotBuilt{Why: "not in this build"}}
	l, err := Load(Options{
		Path:      writeConfig(t, `{"channels": {"whatsapp": {"enabled": true, "bridgeUrl": "ws://x", "allowFrom": ["1"]}}}`),
		Environ:   []string{"NANOBOT_CHANNELS__WHATSAPP__BRIDGE_TOKEN=abc"},
		Platforms: platforms,
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{`channels.whatsapp: not in this build`}, l.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if got := l.Config.Channels.Platforms["whatsapp"]["bridge_token"]; got != "abc" {
		t.Errorf("env value for a platform not built: %v (tree %v)", got, l.Config.Channels.Platforms["whatsapp"])
	}
	if !l.Config.Channels.Common("whatsapp").Enabled {
		t.Error("whatsapp not enabled")
	}
}

func TestAtomicSave0600(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "folder")
	path := filepath.Join(dir, "config.json")
	c := Default()
	c.Providers["openai"] = ProviderConfig{APIKey: "abcdef"}
	if err := Save(path, &c); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %o, want 600", fi.Mode().Perm())
	}
	// Overwrite an existing world-readable file: it becomes 0600 too.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Save(path, &c); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("after resave mode %o, want 600", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temp files left behind: %v", entries)
	}
	l, err := Load(Options{Path: path, Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, l.Config); diff != "" {
		t.Errorf("round trip (-saved +loaded):\n%s", diff)
	}
}

func TestConfigIsolation(t *testing.T) {
	a := writeConfig(t, `{"agents": {"defaults": {"model": "a"}}}`)
	b := writeConfig(t, `{"agents": {"defaults": {"model": "b"}}}`)
	la, err := Load(Options{Path: a, Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	lb, err := Load(Options{Path: b, Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if la.Config.Agents.Defaults.Model != "a" || lb.Config.Agents.Defaults.Model != "b" {
		t.Error("configs mixed up")
	}
	pa, pb := la.Paths, lb.Paths
	for _, pair := range [][2]string{{pa.Workspace, pb.Workspace}, {pa.Sessions, pb.Sessions}, {pa.Cron, pb.Cron}, {pa.Media, pb.Media}, {pa.Logs, pb.Logs}} {
		if pair[0] == pair[1] {
			t.Errorf("two configs share %s", pair[0])
		}
		if !strings.HasPrefix(pair[0], filepath.Dir(a)) || !strings.HasPrefix(pair[1], filepath.Dir(b)) {
			t.Errorf("paths not under their config folder: %v", pair)
		}
	}
}

func TestSecrets(t *testing.T) {
	c := Default()
	c.Providers["openai"] = ProviderConfig{APIKey: "sk-openai-123456", ExtraHeaders: map[string]string{"Authorization": "Bearer abcdefgh", "X-Title": "nanobot-app"}}
	c.Channels.Platforms["telegram"] = map[string]any{"token": "123:telegram-token", "allowFrom": []any{"someuser"}}
	c.Tools.Web.Search.APIKey = "brave-key-1"
	// Credentials inside URLs: a query parameter named like one (Azure
	// Functions' code), a user info password; not other parameters.
	c.Tools.MCPServers = map[string]MCPServerConfig{
		"fn":   {URL: "https://fn.example/mcp?code=fn-code-value&region=westeurope"},
		"auth": {URL: "https://bot:userinfo-pass@mcp.example/sse"},
	}
	c.Providers["azure_openai"] = ProviderConfig{APIBase: "https://x.example/openai?api-version=2024-06-01"}
	got := c.Secrets()
	want := []string{"123:telegram-token", "sk-openai-123456", "Bearer abcdefgh", "fn-code-value", "userinfo-pass", "brave-key-1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("secrets (-want +got):\n%s", diff)
	}
}

func TestProviderWireAPI(t *testing.T) {
	for _, tt := range []struct {
		pc   ProviderConfig
		want string
	}{
		{ProviderConfig{}, ""},
		{ProviderConfig{API: "responses"}, "responses"},
		{ProviderConfig{APIType: "Responses"}, "responses"},
		{ProviderConfig{APIType: "chat_completions"}, "chat"},
		{ProviderConfig{API: "chat", APIType: "responses"}, "chat"},
	} {
		if got := tt.pc.WireAPI(); got != tt.want {
			t.Errorf("%+v.WireAPI() = %q, want %q", tt.pc, got, tt.want)
		}
	}
}

func TestExecSessionsDefaults(t *testing.T) {
	l, err := Load(Options{Path: writeConfig(t, `{"tools": {"exec": {"sessions": {"maxSessions": 3}}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	got := l.Config.Tools.Exec.Sessions
	want := ExecSessionsConfig{Enable: true, MaxSessions: 3, IdleTimeoutMinutes: 30, MaxLifetimeMinutes: 240, MaxOutputChars: 50000}
	if got != want {
		t.Errorf("sessions = %+v, want %+v (the key given, defaults for the rest)", got, want)
	}
	// Switched off, its limits are not checked.
	if _, err := Load(Options{Path: writeConfig(t, `{"tools": {"exec": {"sessions": {"enable": false, "maxSessions": 0}}}}`)}); err != nil {
		t.Errorf("disabled sessions with a zero limit: %v", err)
	}
}
