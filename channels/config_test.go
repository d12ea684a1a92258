package channels

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/configs"
)

type fillTestConfig struct {
	configs.ChannelCommon
	GroupConfig
	APIBase  string  `json:"apiBase"`
	Limit    int64   `json:"limit"`
	Ratio    float64 `json:"ratio"`
	Emoji    string  `json:"emoji"`
	Stream   bool    `json:"stream"`
	Thread   *bool   `json:"thread"`
	Channels []string
}

func TestFillDefaults(t *testing.T) {
	yes := true
	def := fillTestConfig{
		GroupConfig: GroupConfig{GroupPolicy: GroupMention, GroupAllowFrom: []string{"g"}},
		APIBase:     "https://example.com", Limit: 20, Ratio: 0.5, Emoji: "THUMBSUP",
		Stream: true, Thread: &yes, Channels: []string{"c"},
	}
	var cfg fillTestConfig
	cfg.Limit = 7
	FillDefaults(&cfg, def, "Emoji")
	if cfg.GroupPolicy != GroupMention || cfg.APIBase != def.APIBase || cfg.Ratio != 0.5 {
		t.Errorf("zero strings and numbers not filled: %+v", cfg)
	}
	if cfg.Limit != 7 {
		t.Errorf("limit = %d, want the 7 that was set", cfg.Limit)
	}
	if cfg.Emoji != "" {
		t.Errorf("emoji = %q, want it kept empty (listed in keep)", cfg.Emoji)
	}
	if cfg.Stream || cfg.Thread != nil || cfg.Channels != nil || cfg.GroupAllowFrom != nil {
		t.Errorf("bools, pointers and slices must be left alone: %+v", cfg)
	}
}

func TestGroupConfigFlattensInJSON(t *testing.T) {
	var cfg fillTestConfig
	if err := json.Unmarshal([]byte(`{"groupPolicy":"allowlist","groupAllowFrom":["a"]}`), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.GroupPolicy != GroupAllowlist || len(cfg.GroupAllowFrom) != 1 {
		t.Fatalf("got %+v, want the keys at the top level", cfg.GroupConfig)
	}
	if err := cfg.Check(); err != nil {
		t.Errorf("Check() = %v", err)
	}
	cfg.GroupAllowFrom = nil
	if err := cfg.Check(); err == nil || !strings.Contains(err.Error(), "groupAllowFrom: required") {
		t.Errorf("Check() = %v, want groupAllowFrom: required", err)
	}
}

func TestProblems(t *testing.T) {
	var p Problems
	if p.Err() != nil {
		t.Fatalf("empty Problems: Err() = %v, want nil", p.Err())
	}
	p.Required(" ", "appId is required (console)")
	p.Required("x", "never")
	p.URL("apiBase", "ftp://h")
	p.URL("wsUrl", "wss://h", "ws", "wss")
	p.NonNegative("maxMediaBytes", -1)
	p.NonNegative("other", 0)
	p.Path("webhookPath", "/ok")
	p.Path("webhookPath", "x")
	p.OneOf("mode", "forward", "forward", "reverse")
	p.OneOf("mode", "x", "forward", "reverse")
	p.OneOf("kind", "x", "a", "b", "c")
	p.Add(nil)
	p.Addf("msgFormat: %q is not known", "x")
	got := p.Err().Error()
	want := "appId is required (console)\n" +
		`apiBase: "ftp://h" is not an http(s) URL` + "\n" +
		"maxMediaBytes: must not be negative\n" +
		`webhookPath: "x" must be a path starting with /` + "\n" +
		`mode: "x" is not "forward" or "reverse"` + "\n" +
		`kind: "x" is not "a", "b" or "c"` + "\n" +
		`msgFormat: "x" is not known`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestDepsHelpers(t *testing.T) {
	var d Deps
	if d.Logger() == nil {
		t.Fatal("Logger() = nil without a Log")
	}
	if got := d.MediaDir("qq"); got != "" {
		t.Errorf("MediaDir without a media folder = %q, want empty", got)
	}
	d.Paths.Media = t.TempDir()
	if got, want := d.MediaDir("qq"), filepath.Join(d.Paths.Media, "qq"); got != want {
		t.Errorf("MediaDir = %q, want %q", got, want)
	}
}

func TestCheckSend(t *testing.T) {
	tests := []struct {
		m    bus.Outbound
		want string
	}{
		{bus.Outbound{ChatID: "c1", Content: "hi"}, ""},
		{bus.Outbound{Content: "hi"}, "slack: send: empty chat id"},
		{bus.Outbound{ChatID: "c1", Content: " \n"}, "slack: send to c1: empty message"},
	}
	for _, tt := range tests {
		err := CheckSend("slack", tt.m)
		if tt.want == "" {
			if err != nil {
				t.Errorf("CheckSend(%+v) = %v, want nil", tt.m, err)
			}
			continue
		}
		var perm *PermanentError
		if !errors.As(err, &perm) || err.Error() != tt.want {
			t.Errorf("CheckSend(%+v) = %v, want the PermanentError %q", tt.m, err, tt.want)
		}
	}
}

// TestGroupConfigLoads loads a config.json whose platform embeds
// GroupConfig: the flattened keys are typed and checked like the platform's
// own (a wrong type is an error naming the key, a typo a warning), the
// environment can set them, and they decode into the embedded struct.
func TestGroupConfigLoads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	file := `{"channels": {"acme": {"enabled": true, "groupAllowFrom": ["g1"], "apiBase": "https://x.test", "groupAlowFrom": ["typo"]}}}`
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	platforms := map[string]any{"acme": fillTestConfig{}}
	l, err := configs.Load(configs.Options{Path: path, Platforms: platforms, Environ: []string{"NANOBOT_CHANNELS__ACME__GROUPPOLICY=allowlist"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(l.Warnings, "\n"), "groupAlowFrom") {
		t.Errorf("warnings %q, want one about the typo groupAlowFrom", l.Warnings)
	}
	var cfg fillTestConfig
	if err := l.Config.Channels.Decode("acme", &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.GroupPolicy != GroupAllowlist || len(cfg.GroupAllowFrom) != 1 || cfg.GroupAllowFrom[0] != "g1" {
		t.Errorf("decoded %+v, want allowlist with g1", cfg.GroupConfig)
	}
	bad := `{"channels": {"acme": {"groupPolicy": 7}}}`
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := configs.Load(configs.Options{Path: path, Platforms: platforms, Environ: []string{}}); err == nil || !strings.Contains(err.Error(), "channels.acme.groupPolicy") {
		t.Errorf("groupPolicy: 7: Load = %v, want an error naming channels.acme.groupPolicy", err)
	}
}
