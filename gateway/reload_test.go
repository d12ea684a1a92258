package gateway

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// Editing the config file is enough, no SIGHUP: the gateway sees the
// change, applies the live settings (a new allowed sender is admitted) and
// names the settings that wait for a restart (the model), in its status.
func TestConfigFileChangeIsAppliedOrNamed(t *testing.T) {
	if _, ok := natsURL.Load(t); ok {
		t.Skip("reload is the same in cluster mode; covered by TestReloadUpdatesAllowLists")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	write := func(allow, admins []string, model string) {
		raw, _ := json.Marshal(map[string]any{
			"agents":   map[string]any{"defaults": map[string]any{"model": model}},
			"gateway":  map[string]any{"heartbeat": map[string]any{"enabled": false}},
			"channels": map[string]any{"fake": map[string]any{"enabled": true, "allowFrom": allow, "admins": admins}},
		})
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil { // as editors and the workbench save
			t.Fatal(err)
		}
	}
	load := func() (*configs.Config, error) {
		l, err := configs.Load(configs.Options{Path: path})
		if err != nil {
			return nil, err
		}
		return &l.Config, nil
	}
	write([]string{"u1"}, []string{"u1"}, "test")
	start, err := load()
	if err != nil {
		t.Fatal(err)
	}
	fc := newFake("fake")
	r := startGatewayOpts(t, *start, &echoLLM{}, func(o *Options) {
		o.Paths.ConfigFile = path
		o.ReloadConfig = load
	}, fc)
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "g", SenderID: "newcomer", Content: "hi", MessageID: "1"}
	waitfor.True(t, "denied before the edit", func() bool { fc.mu.Lock(); defer fc.mu.Unlock(); return len(fc.denied) == 1 })

	write([]string{"u1", "newcomer"}, []string{"u1", "newcomer"}, "other/model")
	var st *ReloadStatus
	waitfor.True(t, "the reload in /api/status", func() bool { st = reloadStatus(t, r); return st != nil })
	if st.Source != "the config file changed" || st.Error != "" {
		t.Errorf("reload = %+v", st)
	}
	if !slices.Equal(st.Applied, []string{"channels.fake.admins", "channels.fake.allowFrom"}) {
		t.Errorf("applied %q, want [channels.fake.admins channels.fake.allowFrom]", st.Applied)
	}
	if !slices.Contains(st.Restart, "agents.defaults.model") || slices.Contains(st.Restart, "channels.fake.allowFrom") {
		t.Errorf("restart needed for %q, want agents.defaults.model and not the allow-list", st.Restart)
	}
	// The status is set after the gate took the new lists: one message is
	// enough.
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "g", SenderID: "newcomer", Content: "again", MessageID: "2"}
	waitfor.True(t, "admitted after the edit", func() bool { return len(fc.texts("g")) > 0 })

	// A config that no longer loads is reported and the running one kept:
	// the newcomer is still admitted.
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitfor.True(t, "the failed reload in /api/status", func() bool { st = reloadStatus(t, r); return st != nil && st.Error != "" })
	if strings.Contains(st.Error, "not json") || strings.Contains(st.Error, "invalid character") {
		t.Errorf("status error %q quotes the file; /api/status needs no credential", st.Error)
	}
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "g2", SenderID: "newcomer", Content: "still here", MessageID: "3"}
	waitfor.True(t, "still admitted after a broken edit", func() bool { return len(fc.texts("g2")) > 0 })
}

// reloadStatus is the Reload part of r's /api/status, as nanobot status
// reads it.
func reloadStatus(t *testing.T, r *running) *ReloadStatus {
	t.Helper()
	var s Status
	_, body := get(t, "http://"+r.addr+"/api/status")
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatalf("status %q: %v", body, err)
	}
	return s.Reload
}
