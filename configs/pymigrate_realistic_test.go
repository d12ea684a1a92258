package configs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// realisticPythonConfig is the kind of file a nanobot user runs: five
// channels, four MCP servers, five providers (two of the newer names),
// Dream (carried over), presets, one conversation across platforms and a
// Slack DM list.
const realisticPythonConfig = `{
  "agents": {"defaults": {
    "model": "openrouter/anthropic/claude-sonnet-4.5", "maxTokens": 8192, "temperature": 0.2,
    "unifiedSession": true, "timezone": "Europe/Berlin",
    "dream": {"enabled": true, "intervalH": 6}
  }},
  "modelPresets": {"cheap": {"model": "deepseek-chat", "provider": "deepseek"}},
  "providers": {
    "openrouter": {"apiKey": "${OPENROUTER_API_KEY}"},
    "deepseek": {"apiKey": "${DEEPSEEK_API_KEY}"},
    "mistral": {"apiKey": "${MISTRAL_API_KEY}"},
    "kimiCoding": {"apiKey": "${KIMI_API_KEY}"},
    "ollama": {"apiBase": "http://localhost:11434/v1"}
  },
  "channels": {
    "telegram": {"enabled": true, "token": "${TELEGRAM_TOKEN}", "allowFrom": ["123456789"]},
    "slack": {"enabled": true, "botToken": "${SLACK_BOT_TOKEN}", "appToken": "${SLACK_APP_TOKEN}", "allowFrom": ["U01"],
              "dm": {"enabled": true, "policy": "allowlist", "allowFrom": ["U02"]}},
    "discord": {"enabled": true, "token": "${DISCORD_TOKEN}", "allowFrom": ["4242"]},
    "email": {"enabled": true, "imapHost": "imap.example.com", "imapUsername": "bot@example.com", "imapPassword": "${IMAP_PASSWORD}",
              "smtpHost": "smtp.example.com", "smtpUsername": "bot@example.com", "smtpPassword": "${SMTP_PASSWORD}",
              "fromAddress": "bot@example.com", "allowFrom": ["me@example.com"]},
    "matrix": {"enabled": true, "homeserver": "https://matrix.example.org", "userId": "@bot:example.org",
               "accessToken": "${MATRIX_TOKEN}", "allowFrom": ["@me:example.org"]}
  },
  "tools": {
    "mcpServers": {
      "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]},
      "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
      "search": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${MCP_TOKEN}"}},
      "git": {"command": "uvx", "args": ["mcp-server-git"], "toolTimeout": 60}
    },
    "web": {"search": {"provider": "exa", "apiKey": "${EXA_API_KEY}"}},
    "imageGeneration": {"enabled": true}
  }
}`

// TestMigratePythonRealisticConfig checks a realistic nanobot config key by
// key: what the report calls each one, and what the written file holds.
// "carried over" must mean it works here.
func TestMigratePythonRealisticConfig(t *testing.T) {
	m, err := MigratePython([]byte(realisticPythonConfig), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]KeyReport{}
	for _, k := range m.Keys {
		got[k.Path] = k
	}
	changed := map[string]bool{"channels.slack.dm.enabled": true, "channels.slack.dm.policy": true}
	unsupported := map[string]bool{}
	for _, k := range m.Keys {
		switch {
		case unsupported[k.Path]:
			if k.Status != CompatUnsupported {
				t.Errorf("%s: %q, want unsupported (%s)", k.Path, k.Status, k.Note)
			}
		case changed[k.Path]:
			if k.Status != CompatChanged {
				t.Errorf("%s: %q, want changes meaning (%s)", k.Path, k.Status, k.Note)
			}
		case k.Status != CompatSame:
			t.Errorf("%s: %q (%s), want carried over", k.Path, k.Status, k.Note)
		}
	}
	if len(m.Keys) < 40 {
		t.Errorf("only %d keys reported", len(m.Keys))
	}
	for _, p := range []string{"agents.defaults.dream.intervalH", "channels.slack.dm.policy", "channels.matrix.accessToken", "agents.defaults.unifiedSession", "channels.slack.dm.allowFrom", "tools.imageGeneration.enabled",
		"providers.kimiCoding.apiKey", "providers.mistral.apiKey", "tools.web.search.provider", "tools.mcpServers.git.toolTimeout"} {
		if _, ok := got[p]; !ok {
			t.Errorf("%s: not in the report", p)
		}
	}

	var out map[string]any
	if err := json.Unmarshal(m.Output, &out); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]any{
		"agents.defaults.sessionScope":     "shared",
		"agents.defaults.unifiedSession":   nil,
		"agents.defaults.maxTokens":        float64(8192),
		"agents.defaults.timezone":         "Europe/Berlin",
		"providers.kimiCoding.apiKey":      "${KIMI_API_KEY}",
		"providers.ollama.apiBase":         "http://localhost:11434/v1",
		"modelPresets.cheap.provider":      "deepseek",
		"channels.slack.dm":                nil,
		"channels.email.imapHost":          "imap.example.com",
		"channels.matrix.homeserver":       "https://matrix.example.org",
		"tools.mcpServers.search.url":      "https://mcp.example.com/mcp",
		"tools.mcpServers.git.toolTimeout": float64(60),
		"tools.web.search.provider":        "exa",
		"tools.image.enabled":              true,
		"tools.image.model":                "openai/gpt-5.4-image-2",
		"tools.imageGeneration":            nil,
	} {
		if got := valueAt(out, path); got != want {
			t.Errorf("output %s = %v, want %v", path, got, want)
		}
	}
	slackDM, _ := json.Marshal(valueAt(out, "channels.slack.allowFrom"))
	if string(slackDM) != `["U01","U02"]` {
		t.Errorf("slack allowFrom %s, want U01 and U02", slackDM)
	}
	// The written file loads here without an error and resolves its
	// providers by name.
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, m.Output, 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(Options{Path: path, Environ: []string{"OPENROUTER_API_KEY=a", "DEEPSEEK_API_KEY=b", "MISTRAL_API_KEY=c", "KIMI_API_KEY=d",
		"TELEGRAM_TOKEN=123:abc", "SLACK_BOT_TOKEN=xoxb-1", "SLACK_APP_TOKEN=xapp-1", "DISCORD_TOKEN=x", "IMAP_PASSWORD=p", "SMTP_PASSWORD=p",
		"MATRIX_TOKEN=t", "MCP_TOKEN=m", "EXA_API_KEY=e"}})
	if err != nil {
		t.Fatalf("the migrated file does not load: %v", err)
	}
	if loaded.Config.Agents.Defaults.SessionScope != ScopeShared || !loaded.Config.Tools.Image.Enabled {
		t.Errorf("loaded: sessionScope %q, image %v", loaded.Config.Agents.Defaults.SessionScope, loaded.Config.Tools.Image.Enabled)
	}
}
