package setup

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/configs"
)

func load(t *testing.T, file string) *configs.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := configs.Load(configs.Options{Path: path, Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	return &l.Config
}

func TestSetupInspect(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		missing    []string
		resolved   string
		keyless    bool
		channels   map[string]bool // name -> ready
	}{
		{"empty", `{}`, []string{"model", "channel"}, "", false,
			map[string]bool{"telegram": false, "slack": false, "discord": false}},
		{"a key and Telegram", `{"providers": {"anthropic": {"apiKey": "sk-ant-x"}},
			"channels": {"telegram": {"enabled": true, "token": "1:x"}}}`, []string{}, "anthropic", false,
			map[string]bool{"telegram": true, "slack": false, "discord": false}},
		{"a local server, Telegram without its token", `{"agents": {"defaults": {"model": "llama3", "provider": "ollama"}},
			"channels": {"telegram": {"enabled": true}}}`, []string{"channel"}, "ollama", true,
			map[string]bool{"telegram": false, "slack": false, "discord": false}},
		{"Slack half done, a channel the setup does not guide", `{"providers": {"openrouter": {"apiKey": "k"}}, "agents": {"defaults": {"model": "openrouter/x/y"}},
			"channels": {"slack": {"enabled": true, "botToken": "xoxb-1"}, "matrix": {"enabled": true}, "web": {"enabled": true}}}`,
			[]string{}, "openrouter", false,
			map[string]bool{"telegram": false, "slack": false, "discord": false, "matrix": true}},
		{"only the web chat", `{"providers": {"openai": {"apiKey": "k"}}, "agents": {"defaults": {"model": "gpt-4o"}},
			"channels": {"web": {"enabled": true}}}`, []string{"channel"}, "openai", false,
			map[string]bool{"telegram": false, "slack": false, "discord": false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, tc.file)
			r := Inspect(c, ProviderSettings(c))
			if diff := cmp.Diff(tc.missing, r.Missing); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
			if r.Model.Resolved != tc.resolved || r.Model.Keyless != tc.keyless || r.Model.Ready != (tc.resolved != "") {
				t.Errorf("model %+v, want resolved %q keyless %v", r.Model, tc.resolved, tc.keyless)
			}
			if tc.resolved == "" && r.Model.Problem == "" {
				t.Error("no provider, and no problem said")
			}
			got := map[string]bool{}
			for _, ch := range r.Channels {
				got[ch.Name] = ch.Ready
			}
			if diff := cmp.Diff(tc.channels, got); diff != "" {
				t.Errorf("channels ready (-want +got):\n%s", diff)
			}
		})
	}
}

// The guided channels say which of their secrets are set, never a value.
func TestSetupInspectSecrets(t *testing.T) {
	c := load(t, `{"channels": {"slack": {"enabled": true, "botToken": "xoxb-secret", "appToken": ""}}}`)
	r := Inspect(c, ProviderSettings(c))
	i := slices.IndexFunc(r.Channels, func(s ChannelState) bool { return s.Name == "slack" })
	want := []SecretState{{Key: "botToken", Set: true}, {Key: "appToken", Set: false}}
	if diff := cmp.Diff(want, r.Channels[i].Secrets); diff != "" {
		t.Errorf("slack secrets (-want +got):\n%s", diff)
	}
}
