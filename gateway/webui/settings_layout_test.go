package webui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/configs"
)

// handConfig is laid out by hand: sections in their own order, four-space
// indents, one-line objects, a key nanobot does not know and an "&".
const handConfig = `{
    "providers": {
        "anthropic": { "apiKey": "` + literalKey + `" }
    },
    "channels": {
        "telegram": { "enabled": true, "token": "` + channelToken + `", "allowFrom": ["111"] }
    },
    "myNotes": "kept & untouched",
    "agents": {
        "defaults": {
            "model": "anthropic/claude-test"
        }
    }
}
`

// TestSettingsKeepTheLayout: a settings save and the setup page's password
// rewrite the edited values and nothing else in the file.
func TestSettingsKeepTheLayout(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(file, []byte(handConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	b := newBench(t, true, false, func(o *Options) {
		o.ConfigFile = file
		o.Platforms = map[string]any{"telegram": tgSettings{}}
	})
	hdr := map[string]string{"X-CSRF-Token": b.csrf()}
	code, body, _ := b.do("PATCH", "/api/settings", `{"changes":[{"path":"channels.telegram.allowFrom","value":["111","222"]},`+
		`{"path":"providers.anthropic.apiBase","value":"https://proxy.example/v1?a=1&b=2"}]}`, hdr)
	if code != 200 {
		t.Fatalf("PATCH /api/settings: %d %v", code, body)
	}
	want := strings.NewReplacer(`["111"]`, `["111", "222"]`,
		`"`+literalKey+`" }`, `"`+literalKey+`", "apiBase": "https://proxy.example/v1?a=1&b=2" }`).Replace(handConfig)
	got, _ := os.ReadFile(file)
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Fatalf("config.json after the settings save (-want +got):\n%s", diff)
	}

	code, body, _ = b.do("POST", "/api/setup/password", `{"password":"`+testPassword+`"}`, hdr)
	if code != 200 {
		t.Fatalf("POST /api/setup/password: %d %v", code, body)
	}
	l, err := configs.Load(configs.Options{Path: file, Platforms: map[string]any{"telegram": tgSettings{}}})
	if err != nil {
		t.Fatal(err)
	}
	hash := l.Config.Gateway.WebUI.Password
	want = strings.TrimSuffix(want, "\n}\n") + ",\n    \"gateway\": {\n        \"webui\": {\n            \"password\": \"" + hash + "\"\n        }\n    }\n}\n"
	got, _ = os.ReadFile(file)
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("config.json after the setup password (-want +got):\n%s", diff)
	}
}
