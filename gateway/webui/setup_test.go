package webui

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/setup"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

const (
	savedKey = "sk-saved-0123456789abcdefghij"
	typedKey = "sk-typed-0123456789abcdefghij"
	wrongKey = "sk-wrong-0123456789abcdefghij"
)

// service is a fake of the services the checks ask: an OpenAI-compatible
// /v1/models taking savedKey or typedKey, Slack's auth.test and Discord's
// users/@me; it keeps the Authorization headers it saw.
type service struct {
	*httptest.Server
	mu   sync.Mutex
	auth []string
}

func newService(t *testing.T) *service {
	s := &service{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("Authorization")
		s.mu.Lock()
		s.auth = append(s.auth, r.Method+" "+r.URL.Path+" "+got)
		s.mu.Unlock()
		ok := false
		switch r.Method + " " + r.URL.Path {
		case "GET /v1/models":
			ok = got == "Bearer "+savedKey || got == "Bearer "+typedKey
			if ok {
				_, _ = w.Write([]byte(`{"data":[{"id":"model-a"},{"id":"model-b"}]}`))
				return
			}
		case "POST /slack/auth.test":
			if got == "Bearer xoxb-good" {
				_, _ = w.Write([]byte(`{"ok":true,"team":"Acme"}`))
			} else {
				_, _ = w.Write([]byte(`{"ok":false,"error":"invalid_auth"}`))
			}
			return
		case "GET /api/v10/users/@me":
			if ok = got == "Bot discord-good"; ok {
				_, _ = w.Write([]byte(`{"id":"7","username":"helper","bot":true}`))
				return
			}
		default:
			http.NotFound(w, r)
			return
		}
		// Some services quote the key they refuse.
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided: ` + got + `"}}`))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *service) saw() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.auth)
}

// setupBench is a workbench over config.json in a temporary folder, its
// checks pointed at the fakes; every response is searched for the keys.
func setupBench(t *testing.T, config string) (*bench, string, *service, *telegramtest.Server) {
	t.Helper()
	svc := newService(t)
	tg := telegramtest.New(t)
	file := filepath.Join(t.TempDir(), "config.json")
	if config != "" {
		if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b := newBench(t, true, false, func(o *Options) {
		o.ConfigFile = file
		o.Platforms = map[string]any{"telegram": tgSettings{}}
		o.Setup = &setup.Checker{TelegramBase: tg.URL, SlackBase: svc.URL + "/slack/", DiscordBase: svc.URL}
	})
	t.Cleanup(func() {
		for _, body := range b.bodies {
			for _, secret := range []string{savedKey, typedKey, wrongKey, telegramtest.Token, "xoxb-good", "xoxb-bad", "discord-good"} {
				if strings.Contains(body, secret) {
					t.Errorf("a response carries a secret: %.300s", body)
				}
			}
		}
	})
	return b, file, svc, tg
}

func (b *bench) check(tok, body string) (int, map[string]any) {
	b.t.Helper()
	code, out, _ := b.do("POST", "/api/setup/check", body, map[string]string{"X-CSRF-Token": tok})
	return code, out
}

// GET /api/setup on an empty config names what is missing; once a model
// provider with a key and Telegram with its token are saved, nothing is.
func TestSetupReport(t *testing.T) {
	b, file, _, _ := setupBench(t, "")
	code, body, _ := b.do("GET", "/api/setup", "", nil)
	if code != 200 {
		t.Fatalf("GET /api/setup: %d %v", code, body)
	}
	if got := body["missing"]; !slices.Equal(toStrings(got), []string{"model", "channel"}) {
		t.Errorf("missing %v, want model and channel", got)
	}
	model := body["model"].(map[string]any)
	if model["ready"] != false || model["problem"] == "" {
		t.Errorf("model %v, want not ready, with why", model)
	}
	pw := body["password"].(map[string]any)
	if pw["set"] != false || pw["needed"] != false {
		t.Errorf("password %v, want none set and none needed on loopback", pw)
	}
	var names []string
	for _, p := range body["providers"].([]any) {
		names = append(names, p.(map[string]any)["name"].(string))
	}
	for _, want := range []string{"anthropic", "openai", "openrouter", "ollama", "vllm"} {
		if !slices.Contains(names, want) {
			t.Errorf("providers offered %v, want %s among them", names, want)
		}
	}
	if slices.Contains(names, "github-copilot") {
		t.Error("a sign-in provider is offered with a key")
	}

	config := `{"providers": {"vllm": {"apiBase": "http://127.0.0.1:1/v1", "apiKey": "` + savedKey + `"}},
		"agents": {"defaults": {"model": "my-model", "provider": "vllm"}},
		"channels": {"telegram": {"enabled": true, "token": "` + telegramtest.Token + `"}}}`
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	_, body, _ = b.do("GET", "/api/setup", "", nil)
	if got := body["missing"]; len(toStrings(got)) != 0 {
		t.Errorf("missing %v, want nothing", got)
	}
	model = body["model"].(map[string]any)
	if model["resolved"] != "vllm" || model["hasKey"] != true || model["ready"] != true {
		t.Errorf("model %v, want vllm with its key", model)
	}
	for _, c := range body["channels"].([]any) {
		c := c.(map[string]any)
		if c["name"] == "telegram" && (c["ready"] != true || c["enabled"] != true) {
			t.Errorf("telegram %v, want ready", c)
		}
	}
	if got := toStrings(body["waiting"]); len(got) != 0 {
		t.Errorf("waiting %v, want nothing (no setting waits for a restart)", got)
	}
}

// TestSetupWaitsForRestart: a provider and a channel saved while the
// gateway runs are not missing from the file any more, but the running
// gateway has them only after a restart: GET /api/setup says they wait.
func TestSetupWaitsForRestart(t *testing.T) {
	var restart []string
	file := filepath.Join(t.TempDir(), "config.json")
	config := `{"providers": {"vllm": {"apiBase": "http://127.0.0.1:1/v1", "apiKey": "` + savedKey + `"}},
		"agents": {"defaults": {"model": "my-model", "provider": "vllm"}},
		"channels": {"telegram": {"enabled": true, "token": "` + telegramtest.Token + `"}}}`
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	b := newBench(t, true, false, func(o *Options) {
		o.ConfigFile = file
		o.Platforms = map[string]any{"telegram": tgSettings{}}
		o.RestartNeeded = func() []string { return restart }
	})
	for _, tc := range []struct {
		name    string
		restart []string
		want    []string
	}{
		{"nothing saved since the start", nil, nil},
		{"a provider key and the model", []string{"agents.defaults.model", "agents.defaults.provider", "providers.vllm.apiKey"}, []string{"model"}},
		{"a channel's token", []string{"channels.telegram.enabled", "channels.telegram.token"}, []string{"channel"}},
		{"both", []string{"channels.telegram.token", "providers.vllm.apiBase"}, []string{"model", "channel"}},
		{"neither: the heartbeat", []string{"gateway.heartbeat.intervalS"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			restart = tc.restart
			code, body, _ := b.do("GET", "/api/setup", "", nil)
			if code != 200 {
				t.Fatalf("GET /api/setup: %d %v", code, body)
			}
			if got := toStrings(body["waiting"]); !slices.Equal(got, tc.want) {
				t.Errorf("waiting %v, want %v", got, tc.want)
			}
			if got := toStrings(body["missing"]); len(got) != 0 {
				t.Errorf("missing %v, want nothing: the file has both", got)
			}
		})
	}
}

// A provider check: a refused key says so (no key in the answer, nothing
// saved); an empty key checks the saved one; a $VAR is read from the
// gateway's environment; the base typed wins over the saved one.
func TestSetupCheckProvider(t *testing.T) {
	svc := newService(t)
	config := `{"providers": {"vllm": {"apiBase": "` + svc.URL + `/v1", "apiKey": "` + savedKey + `"}}}`
	b, file, own, _ := setupBench(t, config)
	tok := b.csrf()

	code, out := b.check(tok, `{"kind":"provider","name":"vllm","key":"`+wrongKey+`"}`)
	if code != 200 || out["ok"] != false || out["checked"] != true || !strings.Contains(out["detail"].(string), "the key was refused (HTTP 401)") {
		t.Errorf("a wrong key: %d %v, want ok false, refused", code, out)
	}
	if got, _ := os.ReadFile(file); string(got) != config {
		t.Errorf("a check changed config.json:\n%s", got)
	}

	code, out = b.check(tok, `{"kind":"provider","name":"vllm"}`)
	if code != 200 || out["ok"] != true || out["detail"] != "vLLM answered: 2 models" || len(out["models"].([]any)) != 2 {
		t.Errorf("the saved key: %d %v, want ok with 2 models", code, out)
	}
	if got := svc.saw(); got[len(got)-1] != "GET /v1/models Bearer "+savedKey {
		t.Errorf("the service saw %q, want the saved key last", got)
	}

	t.Setenv("TEST_SETUP_TYPED_KEY", typedKey)
	code, out = b.check(tok, `{"kind":"provider","name":"vllm","key":"${TEST_SETUP_TYPED_KEY}","apiBase":"`+own.URL+`/v1"}`)
	if code != 200 || out["ok"] != true {
		t.Errorf("a ${VAR} key at a typed base: %d %v", code, out)
	}
	if got := own.saw(); len(got) != 1 || got[0] != "GET /v1/models Bearer "+typedKey {
		t.Errorf("the typed base saw %q, want the variable's key", got)
	}

	for _, c := range []struct{ body, path string }{
		{`{"kind":"provider","name":"nosuch"}`, "name"},
		{`{"kind":"email"}`, "kind"},
		{`{"kind":"provider","name":"vllm","apiBase":"file:///etc/passwd"}`, "apiBase"},
		{`{"kind":"provider","name":"vllm","apiBase":"http://user:pw@example.com"}`, "apiBase"},
		{`{"kind":"provider","name":"openai"}`, "key"},
		{`{"kind":"provider","name":"vllm","key":"$TEST_SETUP_UNSET_VARIABLE"}`, "key"},
	} {
		if code, out := b.check(tok, c.body); code != 400 || out["path"] != c.path {
			t.Errorf("%s: %d %v, want 400 on %s", c.body, code, out, c.path)
		}
	}
}

// The channel checks ask their platform with the token where it wants it
// (Telegram's getMe against the Telegram fake, Slack's auth.test, Discord's
// users/@me), the saved token when none is typed.
func TestSetupCheckChannels(t *testing.T) {
	b, _, svc, tg := setupBench(t, `{"channels": {"telegram": {"token": "`+telegramtest.Token+`"}}}`)
	tok := b.csrf()
	for _, c := range []struct {
		body string
		ok   bool
		says string
	}{
		{`{"kind":"telegram"}`, true, "Telegram knows this bot: @" + telegramtest.BotUsername},
		{`{"kind":"telegram","key":"` + telegramtest.Token + `"}`, true, "@" + telegramtest.BotUsername},
		{`{"kind":"telegram","key":"123456:not-the-token"}`, false, "Telegram: the token was refused (HTTP 401)"},
		{`{"kind":"slack","key":"xoxb-good"}`, true, "workspace Acme"},
		{`{"kind":"slack","key":"xoxb-bad"}`, false, "Slack: the token was refused (Slack said: invalid_auth)"},
		{`{"kind":"discord","key":"discord-good"}`, true, "Discord knows this bot: helper"},
		{`{"kind":"discord","key":"discord-bad"}`, false, "Discord: the token was refused (HTTP 401)"},
	} {
		code, out := b.check(tok, c.body)
		if code != 200 || out["ok"] != c.ok || !strings.Contains(out["detail"].(string), c.says) {
			t.Errorf("%s: %d %v, want ok %v saying %q", c.body, code, out, c.ok, c.says)
		}
	}
	if n := len(tg.Calls("getMe")); n != 2 {
		t.Errorf("Telegram got %d getMe calls with its token, want 2", n)
	}
	want := []string{"POST /slack/auth.test Bearer xoxb-good", "POST /slack/auth.test Bearer xoxb-bad", "GET /api/v10/users/@me Bot discord-good", "GET /api/v10/users/@me Bot discord-bad"}
	if got := svc.saw(); !slices.Equal(got, want) {
		t.Errorf("the services saw %q, want %q", got, want)
	}
	if code, out := b.check(tok, `{"kind":"slack"}`); code != 400 || out["path"] != "key" {
		t.Errorf("slack with no token typed or saved: %d %v, want 400 on key", code, out)
	}
}

// Checks run one at a time: one sent while another waits for its answer
// is refused at once (429), not queued; and at most checksPerMinute run
// in a minute. Without the CSRF token, none runs.
func TestSetupChecksAreSerialized(t *testing.T) {
	b, _, _, tg := setupBench(t, "")
	tok := b.csrf()
	if code, _, _ := b.do("POST", "/api/setup/check", `{"kind":"telegram","key":"`+telegramtest.Token+`"}`, nil); code != 403 {
		t.Errorf("without the CSRF token: %d, want 403", code)
	}

	release := tg.Hold("getMe")
	done := make(chan map[string]any, 1)
	go func() {
		_, out := b.check(tok, `{"kind":"telegram","key":"`+telegramtest.Token+`"}`)
		done <- out
	}()
	waitfor.True(t, "the first check at Telegram", func() bool { return len(tg.Calls("getMe")) == 1 })
	code, out, resp := b.do("POST", "/api/setup/check", `{"kind":"telegram","key":"`+telegramtest.Token+`"}`, map[string]string{"X-CSRF-Token": tok})
	if code != 429 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a check while one runs: %d %v, want 429 with Retry-After", code, out)
	}
	release()
	if out := <-done; out["ok"] != true {
		t.Errorf("the first check: %v", out)
	}
	if n := len(tg.Calls("getMe")); n != 1 {
		t.Errorf("Telegram was asked %d times, want once", n)
	}

	// One check ran this minute; the rest of the minute's share runs, the
	// next waits for the minute to pass.
	for i := 1; i < checksPerMinute; i++ {
		if code, out := b.check(tok, `{"kind":"telegram","key":"`+telegramtest.Token+`"}`); code != 200 {
			t.Fatalf("check %d: %d %v", i+1, code, out)
		}
	}
	if code, out := b.check(tok, `{"kind":"telegram","key":"`+telegramtest.Token+`"}`); code != 429 {
		t.Errorf("check %d in a minute: %d %v, want 429", checksPerMinute+1, code, out)
	}
	b.clock.Add(time.Minute)
	if code, out := b.check(tok, `{"kind":"telegram","key":"`+telegramtest.Token+`"}`); code != 200 {
		t.Errorf("a minute later: %d %v", code, out)
	}
}

// The first workbench password is set from the setup page as a bcrypt
// hash; a second is refused (it is changed on the gateway's machine).
func TestSetupPassword(t *testing.T) {
	b, file, _, _ := setupBench(t, `{}`)
	tok := b.csrf()
	post := func(body string) (int, map[string]any) {
		code, out, _ := b.do("POST", "/api/setup/password", body, map[string]string{"X-CSRF-Token": tok})
		return code, out
	}
	if code, out := post(`{"password":"short"}`); code != 400 || out["path"] != "password" {
		t.Errorf("a short password: %d %v, want 400 on password", code, out)
	}
	if code, out := post(`{"password":"` + testPassword + `"}`); code != 200 || out["saved"] != true {
		t.Fatalf("the first password: %d %v", code, out)
	}
	raw, _ := os.ReadFile(file)
	var tree map[string]any
	if err := json.Unmarshal(raw, &tree); err != nil {
		t.Fatal(err)
	}
	if h, _ := configs.GetPath(tree, "gateway.webui.password").(string); !strings.HasPrefix(h, "$2") {
		t.Errorf("gateway.webui.password = %q, want a bcrypt hash", h)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("config.json mode %v, want 0600", fi.Mode().Perm())
	}
	if code, out := post(`{"password":"another long password"}`); code != 409 || out["path"] != "password" {
		t.Errorf("a second password: %d %v, want 409", code, out)
	}
	if after, _ := os.ReadFile(file); string(after) != string(raw) {
		t.Error("the refused password changed config.json")
	}
	_, body, _ := b.do("GET", "/api/setup", "", nil)
	if pw := body["password"].(map[string]any); pw["set"] != true || pw["active"] != false {
		t.Errorf("password %v, want set in the file, active after a restart", pw)
	}
}

// The setup saves the provider it chose as agents.defaults.provider: a
// name nanobot does not know is refused there, not found out at the first
// message.
func TestSetupSavesAKnownProviderName(t *testing.T) {
	b, file, _, _ := setupBench(t, `{}`)
	tok := b.csrf()
	code, out, _ := b.do("PATCH", "/api/settings", `{"changes":[{"path":"agents.defaults.provider","value":"nosuch"}]}`, map[string]string{"X-CSRF-Token": tok})
	if code != 400 || out["path"] != "agents.defaults.provider" {
		t.Errorf("an unknown provider: %d %v, want 400 on agents.defaults.provider", code, out)
	}
	code, out, _ = b.do("PATCH", "/api/settings", `{"changes":[{"path":"agents.defaults.provider","value":"ollama"},{"path":"agents.defaults.model","value":"llama3"}]}`, map[string]string{"X-CSRF-Token": tok})
	if code != 200 {
		t.Fatalf("ollama: %d %v", code, out)
	}
	raw, _ := os.ReadFile(file)
	if !strings.Contains(string(raw), `"provider": "ollama"`) {
		t.Errorf("config.json:\n%s", raw)
	}
}
