package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/configs"
)

// handConfig is a config.json as a person writes one: four-space indents,
// sections in their own order, one-line objects, a key nanobot does not
// know, a ${VAR} reference and an "&" in values.
const handConfig = `{
    "providers": {
        "openai": { "apiKey": "${TEST_EDIT_KEY}", "apiBase": "https://proxy.example/v1?a=1&b=2" }
    },
    "agents": {
        "defaults": {
            "workspace": "WORKSPACE",
            "model": "openai/gpt-4o"
        },
        "list": [
            { "name": "helper", "disabledSkills": [ "cron" ] }
        ]
    },
    "myOwnNotes": "kept & untouched",
    "tools": {
        "exec": {
            "approval": "risky",
            "approvedCommands": ["^ls$"]
        }
    }
}
`

// handApp writes handConfig and loads it as the gateway does.
func handApp(t *testing.T) (*app, string) {
	t.Helper()
	t.Setenv("TEST_EDIT_KEY", "sk-test-not-real")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.json")
	data := strings.Replace(handConfig, "WORKSPACE", filepath.ToSlash(filepath.Join(dir, "workspace")), 1)
	if err := os.WriteFile(cfg, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &app{overrides: map[string]any{}, stderr: io.Discard, configPath: cfg}
	if err := a.load(newVersionCmd(a)); err != nil {
		t.Fatal(err)
	}
	return a, data
}

// checkFile checks that the config file is want, byte for byte, mode 0600.
func checkFile(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("config.json (-want +got):\n%s", diff)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("config.json: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
}

// TestRememberApprovedKeepsTheFile: "Always allow" (`/approve ID always`,
// `nanobot approvals allow ID --always`) rewrites tools.exec.approvedCommands
// and nothing else in the file.
func TestRememberApprovedKeepsTheFile(t *testing.T) {
	a, data := handApp(t)
	if err := a.rememberApproved("exec", "^make && make install$"); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(data, `["^ls$"]`, `["^ls$", "^make && make install$"]`, 1)
	checkFile(t, a.loaded.Path, want)
	if err := a.rememberApproved("exec", "^ls$"); err != nil {
		t.Fatal(err)
	}
	checkFile(t, a.loaded.Path, want)
}

// TestSwitchSkillKeepsTheFile: /skill disable and enable rewrite that
// agent's disabledSkills and nothing else; an agent without its own list
// gets one, indented like its siblings.
func TestSwitchSkillKeepsTheFile(t *testing.T) {
	a, data := handApp(t)
	def, _ := a.loaded.Config.AgentNamed(configs.DefaultAgent)
	got, err := a.switchSkill(def, "weather", true)
	if err != nil || !cmp.Equal(got, []string{"weather"}) {
		t.Fatalf("disable: got %v, %v", got, err)
	}
	want := strings.Replace(data, `"model": "openai/gpt-4o"`,
		"\"model\": \"openai/gpt-4o\",\n            \"disabledSkills\": [\n                \"weather\"\n            ]", 1)
	checkFile(t, a.loaded.Path, want)

	if got, err = a.switchSkill(def, "weather", false); err != nil || len(got) != 0 {
		t.Fatalf("enable: got %v, %v", got, err)
	}
	want = strings.Replace(data, `"model": "openai/gpt-4o"`, "\"model\": \"openai/gpt-4o\",\n            \"disabledSkills\": []", 1)
	checkFile(t, a.loaded.Path, want)

	helper, _ := a.loaded.Config.AgentNamed("helper")
	if got, err = a.switchSkill(helper, "weather", true); err != nil || !cmp.Equal(got, []string{"cron", "weather"}) {
		t.Fatalf("disable for helper: got %v, %v", got, err)
	}
	want = strings.Replace(want, `[ "cron" ]`, `["cron", "weather"]`, 1)
	checkFile(t, a.loaded.Path, want)
}

// TestWebUISetPasswordKeepsTheFile: `nanobot webui set-password` adds
// gateway.webui.password to a file that has none, and later changes just
// its value; nothing else in the file moves, no default is written in.
func TestWebUISetPasswordKeepsTheFile(t *testing.T) {
	a, data := handApp(t)
	setPassword := func(pw string) string {
		t.Helper()
		if out, err := runWithInput(t, pw+"\n", "--config", a.loaded.Path, "webui", "set-password"); err != nil {
			t.Fatalf("set-password: %v (%s)", err, out)
		}
		l, err := configs.Load(configs.Options{Path: a.loaded.Path, Platforms: platformTypes()})
		if err != nil {
			t.Fatal(err)
		}
		return l.Config.Gateway.WebUI.Password
	}
	first := setPassword("a long enough password")
	want := strings.TrimSuffix(data, "\n}\n") + ",\n    \"gateway\": {\n        \"webui\": {\n            \"password\": \"" + first + "\"\n        }\n    }\n}\n"
	checkFile(t, a.loaded.Path, want)

	second := setPassword("another long password")
	checkFile(t, a.loaded.Path, strings.Replace(want, first, second, 1))
}

// runWithInput runs the command line args with stdin, as runIn does.
func runWithInput(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// TestFeishuLoginKeepsTheFile: `channels login feishu` adds channels.feishu
// after the file's last section, indented like the rest, and changes
// nothing else.
func TestFeishuLoginKeepsTheFile(t *testing.T) {
	useFeishuRegistration(t, "cli_kept", "kept-secret-value")
	a, data := handApp(t)
	if out, errOut, err := run(t, "channels", "login", "feishu", "--config", a.loaded.Path); err != nil {
		t.Fatalf("login: %v\n%s%s", err, out, errOut)
	}
	want := strings.TrimSuffix(data, "\n}\n") + `,
    "channels": {
        "feishu": {
            "enabled": true,
            "appId": "cli_kept",
            "appSecret": "kept-secret-value",
            "domain": "feishu"
        }
    }
}
`
	checkFile(t, a.loaded.Path, want)
}

// TestWizardRefreshKeepsTheFile: `onboard --wizard --refresh` answered with
// Enter throughout leaves a hand-written file as it was, byte for byte.
func TestWizardRefreshKeepsTheFile(t *testing.T) {
	llm := modelsServer(t, "sk-right")
	t.Setenv("TEST_EDIT_KEY", "sk-right")
	cfg := filepath.Join(t.TempDir(), "config.json")
	data := `{
    "providers": {
        "vllm": { "apiKey": "${TEST_EDIT_KEY}", "apiBase": "` + llm.URL + `/v1" }
    },
    "myOwnNotes": "kept & untouched",
    "agents": { "defaults": { "provider": "vllm", "model": "m1", "workspace": "a&b" } }
}
`
	if err := os.WriteFile(cfg, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := wizardRun(t, cfg, "", "--wizard", "--refresh")
	if err != nil || !strings.Contains(out, "Saved "+cfg) {
		t.Fatalf("%v\n%s", err, out)
	}
	checkFile(t, cfg, data)
}
