package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/channels/discord"
	"github.com/nanobot-go/nanobot/channels/slack"
	"github.com/nanobot-go/nanobot/channels/slack/slacktest"
	"github.com/nanobot-go/nanobot/channels/telegram"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/setup"
)

// modelsServer is an OpenAI-compatible /models endpoint that accepts one
// key.
func modelsServer(t *testing.T, key string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" || r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"m1","object":"model"},{"id":"m2","object":"model"}]}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func wizardRun(t *testing.T, cfg string, input string, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(strings.NewReader(input))
	cmd.SetArgs(append([]string{"onboard", "--config", cfg}, args...))
	err := cmd.Execute()
	return out.String(), err
}

// TestOnboardWizard walks the wizard from a script (stdin is not a
// terminal): a wrong key is refused by the live models call and entered
// again, the Telegram token is checked with getMe, a ${VAR} reference is
// kept as written, the password is stored as a hash, and the file is 0600
// and loads. --refresh then keeps every answer on Enter.
func TestOnboardWizard(t *testing.T) {
	llm := modelsServer(t, "sk-right")
	tg := telegramtest.New(t)
	sl := slacktest.New(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	t.Setenv("NANOBOT_TEST_TG", telegramtest.Token)
	// The Telegram and Slack fakes stand where the platforms are: the
	// wizard reads an apiBase already in the file, as a test or a
	// self-hosted Bot API server sets it.
	seed := `{"channels": {"telegram": {"apiBase": "` + tg.URL + `"}, "slack": {"apiBase": "` + sl.APIBase() + `"}}}`
	if err := os.WriteFile(cfg, []byte(seed), 0o600); err != nil {
		t.Fatal(err)
	}
	input := strings.Join([]string{
		"vllm",             // provider
		llm.URL + "/v1",    // API base
		"sk-wrong",         // key: refused
		"y",                // enter it again
		"sk-right",         // key: accepted
		"my-model",         // model
		"y",                // Telegram
		"$NANOBOT_TEST_TG", // token as a reference
		"4242|ann",         // allowFrom
		"y",                // Slack
		slacktest.BotToken, // bot token
		slacktest.AppToken, // app token
		"UANN",             // allowFrom
		"y",                // password
		"correct horse battery staple", "correct horse battery staple",
	}, "\n") + "\n"
	out, err := wizardRun(t, cfg, input, "--wizard", "--refresh")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"✗ vLLM: the key was refused (HTTP 401)", "✓ vLLM answered: 2 models", "✓ Telegram knows this bot: @" + telegramtest.BotUsername,
		"✓ Slack accepted the token", "✓ password set", "Saved " + cfg} {
		if !strings.Contains(out, want) {
			t.Errorf("the wizard did not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sk-right") || strings.Contains(out, slacktest.BotToken) {
		t.Errorf("a secret was echoed:\n%s", out)
	}
	raw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(cfg); fi.Mode().Perm() != 0o600 {
		t.Errorf("config mode %v", fi.Mode())
	}
	var tree map[string]any
	if err := json.Unmarshal(raw, &tree); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]any{
		"agents.defaults.provider": "vllm", "agents.defaults.model": "my-model", "providers.vllm.apiKey": "sk-right",
		"channels.telegram.token": "${NANOBOT_TEST_TG}", "channels.telegram.enabled": true, "channels.slack.appToken": slacktest.AppToken,
	} {
		if got := configs.GetPath(tree, path); got != want {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
	if h, _ := configs.GetPath(tree, "gateway.webui.password").(string); !strings.HasPrefix(h, "$2") {
		t.Errorf("the password is not stored as a bcrypt hash: %q", h)
	}
	if _, err := configs.Load(configs.Options{Path: cfg, Platforms: platformTypes()}); err != nil {
		t.Errorf("the written config does not load: %v", err)
	}

	// --refresh with nothing but Enter keeps everything (the checks run
	// again on the stored values).
	before := string(raw)
	out, err = wizardRun(t, cfg, "", "--wizard", "--refresh")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "✓ vLLM answered") || !strings.Contains(out, "✓ Telegram knows this bot") {
		t.Errorf("refresh did not check the kept values:\n%s", out)
	}
	after, _ := os.ReadFile(cfg)
	var a, b map[string]any
	_ = json.Unmarshal([]byte(before), &a)
	_ = json.Unmarshal(after, &b)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("refresh with Enter changed the config:\nbefore %s\nafter  %s", ja, jb)
	}
	if _, err := os.Stat(cfg + ".bak"); err != nil {
		t.Errorf("no backup of the previous config: %v", err)
	}
}

// A channel whose token was not given is not enabled: the wizard would
// otherwise save a config the gateway refuses to start with.
func TestWizardEnablesNoChannelWithoutItsToken(t *testing.T) {
	llm := modelsServer(t, "sk-right")
	tg := telegramtest.New(t)
	sl := slacktest.New(t)
	cfg := filepath.Join(t.TempDir(), "config.json")
	seed := `{"channels": {"telegram": {"apiBase": "` + tg.URL + `"}, "slack": {"apiBase": "` + sl.APIBase() + `"}}}`
	if err := os.WriteFile(cfg, []byte(seed), 0o600); err != nil {
		t.Fatal(err)
	}
	input := strings.Join([]string{
		"vllm", llm.URL + "/v1", "sk-right", "my-model",
		"y", "", "n", // Telegram: no token, not again
		"y", slacktest.BotToken, "", // Slack: no app token
		"n", // no password
	}, "\n") + "\n"
	out, err := wizardRun(t, cfg, input, "--wizard", "--refresh")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"Telegram left as it was: it needs a token", "Slack left off: Socket Mode needs the app-level token", "Saved " + cfg} {
		if !strings.Contains(out, want) {
			t.Errorf("the wizard did not say %q:\n%s", want, out)
		}
	}
	l, err := configs.Load(configs.Options{Path: cfg, Environ: []string{}, Platforms: platformTypes()})
	if err != nil {
		t.Fatal(err)
	}
	if en := l.Config.Channels.Enabled(); len(en) != 0 {
		t.Errorf("enabled without their tokens: %v", en)
	}
	if p := channelProblems(&l.Config); len(p) != 0 {
		t.Errorf("the saved config would not start: %v", p)
	}
}

// A channel the file already had broken does not stop the wizard saving
// what it was asked (it refuses only a problem it would add).
func TestWizardSavesBesideABrokenChannelItDidNotTouch(t *testing.T) {
	llm := modelsServer(t, "sk-right")
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"channels": {"email": {"enabled": true}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	input := strings.Join([]string{"vllm", llm.URL + "/v1", "sk-right", "my-model", "n", "n", "n"}, "\n") + "\n"
	out, err := wizardRun(t, cfg, input, "--wizard", "--refresh")
	if err != nil || !strings.Contains(out, "Saved "+cfg) {
		t.Fatalf("%v\n%s", err, out)
	}
}

// changeOnRead changes a file the first time the wizard reads its input:
// another writer (the gateway saving an approved command) while the
// questions are answered.
type changeOnRead struct {
	r    io.Reader
	path string
	data []byte
	done bool
}

func (c *changeOnRead) Read(p []byte) (int, error) {
	if !c.done {
		c.done = true
		if err := os.WriteFile(c.path, c.data, 0o600); err != nil {
			return 0, err
		}
	}
	return c.r.Read(p)
}

// TestOnboardWizardKeepsAConcurrentChange: a config saved by someone else
// while the wizard asked is not overwritten; the wizard says to run again.
func TestOnboardWizardKeepsAConcurrentChange(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, []byte(`{"agents": {"defaults": {"model": "m"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	meanwhile := []byte(`{"tools": {"exec": {"approvedCommands": ["^make deploy$"]}}}`)
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(&changeOnRead{r: strings.NewReader("ollama\n"), path: cfg, data: meanwhile})
	cmd.SetArgs([]string{"onboard", "--config", cfg, "--wizard", "--refresh"})
	err := cmd.Execute()
	if err == nil || !strings.Contains(err.Error(), "changed while this command ran") {
		t.Fatalf("want the concurrent change refused, got %v\n%s", err, out.String())
	}
	if got, _ := os.ReadFile(cfg); string(got) != string(meanwhile) {
		t.Errorf("the concurrent change was overwritten:\n%s", got)
	}
}

// TestSetupChecksTheAdaptersAPIs: the setup's checks go where the
// adapters connect when the config names no apiBase (the gateway may not
// import a platform, so the addresses are written twice).
func TestSetupChecksTheAdaptersAPIs(t *testing.T) {
	for _, c := range []struct{ setup, adapter string }{
		{setup.TelegramAPI, telegram.DefaultAPIBase},
		{setup.SlackAPI, slack.DefaultAPIBase},
		{setup.DiscordAPI, discord.DefaultAPIBase},
	} {
		if c.setup != c.adapter {
			t.Errorf("the setup checks %s, the adapter connects to %s", c.setup, c.adapter)
		}
	}
}
