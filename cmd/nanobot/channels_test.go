package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

func TestChannelsLogin(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"channels": {"discord": {"token": "x"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, "channels", "login", "nosuch", "--config", cfg); err == nil || !strings.Contains(err.Error(), "unknown channel") {
		t.Errorf("unknown channel: %v", err)
	}
	if _, _, err := run(t, "channels", "login", "discord", "--config", cfg); err == nil || !strings.Contains(err.Error(), "needs no interactive login") {
		t.Errorf("discord: %v", err)
	}
}

// useFeishuRegistration points `channels login feishu` at a fake of
// Feishu's registration service whose scan is approved at the first poll
// and creates the bot appID with secret, after running onPoll (if any).
func useFeishuRegistration(t *testing.T, appID, secret string, onPoll ...func()) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		switch r.Form.Get("action") {
		case "init":
			fmt.Fprint(w, `{"supported_auth_methods":["client_secret"]}`)
		case "begin":
			fmt.Fprint(w, `{"device_code":"dev-9","verification_uri_complete":"https://accounts.example/qr?c=9","interval":1,"expire_in":60}`)
		case "poll":
			for _, f := range onPoll {
				f()
			}
			fmt.Fprintf(w, `{"client_id":%q,"client_secret":%q}`, appID, secret)
		}
	}))
	t.Cleanup(srv.Close)
	feishuAccounts = map[string]string{"feishu": srv.URL}
	t.Cleanup(func() { feishuAccounts = nil })
}

// TestFeishuLoginByQR: `channels login feishu` shows the QR code, waits
// for the scan and saves the created bot's app id and secret as an
// enabled channels.feishu (0600, the old file kept as .bak), without
// printing the secret.
func TestFeishuLoginByQR(t *testing.T) {
	useFeishuRegistration(t, "cli_9f", "very-secret-value")
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"providers": {"openai": {"apiKey": "${OPENAI_API_KEY}"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run(t, "channels", "login", "feishu", "--config", cfg)
	if err != nil {
		t.Fatalf("login: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(out, "https://accounts.example/qr?c=9") || !strings.Contains(out, "cli_9f") || strings.Contains(out+errOut, "very-secret-value") {
		t.Errorf("the login printed:\n%s%s", out, errOut)
	}
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Providers map[string]map[string]any `json:"providers"`
		Channels  map[string]map[string]any `json:"channels"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	f := c.Channels["feishu"]
	if f["appId"] != "cli_9f" || f["appSecret"] != "very-secret-value" || f["domain"] != "feishu" || f["enabled"] != true {
		t.Errorf("channels.feishu saved as %v", f)
	}
	if c.Providers["openai"]["apiKey"] != "${OPENAI_API_KEY}" {
		t.Errorf("the rest of the file changed: %v", c.Providers)
	}
	if fi, err := os.Stat(cfg); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("config mode: %v %v", fi, err)
	}
	if _, err := os.Stat(cfg + ".bak"); err != nil {
		t.Errorf("no .bak: %v", err)
	}
}

// TestFeishuLoginKeepsAConfigSavedMeanwhile: the config file saved by
// someone else while the login waited for the scan is read again and the
// bot merged into it: neither the other change nor the bot is lost.
func TestFeishuLoginKeepsAConfigSavedMeanwhile(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte(`{"agents": {"defaults": {"model": "gpt-4.1"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	useFeishuRegistration(t, "cli_meanwhile", "meanwhile-secret-value", func() {
		// The workbench saves the model while the owner scans the code.
		if err := os.WriteFile(cfg, []byte(`{"agents": {"defaults": {"model": "gpt-5"}}}`), 0o600); err != nil {
			t.Error(err)
		}
	})
	out, errOut, err := run(t, "channels", "login", "feishu", "--config", cfg)
	if err != nil || strings.Contains(out+errOut, "meanwhile-secret-value") {
		t.Fatalf("login: %v\n%s%s", err, out, errOut)
	}
	var c struct {
		Agents   map[string]map[string]any `json:"agents"`
		Channels map[string]map[string]any `json:"channels"`
	}
	if b, err := os.ReadFile(cfg); err != nil || json.Unmarshal(b, &c) != nil {
		t.Fatalf("read the config: %v", err)
	}
	if c.Agents["defaults"]["model"] != "gpt-5" || c.Channels["feishu"]["appId"] != "cli_meanwhile" || c.Channels["feishu"]["appSecret"] != "meanwhile-secret-value" {
		t.Errorf("saved agents %v, channels %v; want the change made meanwhile and the bot", c.Agents, c.Channels)
	}
}

// TestFeishuLoginChecksTheFileBeforeTheScan: a config the login could not
// edit is refused before a bot is created for nothing.
func TestFeishuLoginChecksTheFileBeforeTheScan(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfg, []byte("{\"agents\": {} // a comment\n}"), 0o600); err != nil {
		t.Fatal(err)
	}
	var polled atomic.Bool
	useFeishuRegistration(t, "cli_x", "x-secret-value", func() { polled.Store(true) })
	_, _, err := run(t, "channels", "login", "feishu", "--config", cfg)
	if err == nil || !strings.Contains(err.Error(), "JSON") || polled.Load() {
		t.Errorf("login on a commented config: %v (registration polled: %v)", err, polled.Load())
	}
}
