package webui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/agent/skills/registry"
	"github.com/nanobot-go/nanobot/agent/skills/registry/registrytest"
)

// TestSkillRegistryAPI: the workbench searches the registry, installs a
// skill and says when the registry flags it as suspicious, refuses one
// flagged as malware (422, nothing written) and removes what it installed.
func TestSkillRegistryAPI(t *testing.T) {
	reg := registrytest.New(t)
	for _, slug := range []string{"weather", "odd", "stealer"} {
		reg.Publish(slug, registrytest.Version{Version: "1.0.0", Archive: registrytest.Zip(t, map[string]string{"SKILL.md": registrytest.Skill(slug, "The "+slug)})})
	}
	reg.Flag("odd", registrytest.Moderation{Suspicious: true})
	reg.Flag("stealer", registrytest.Moderation{MalwareBlocked: true})
	ws := t.TempDir()
	dir := filepath.Join(ws, "skills")
	in := &registry.Installer{Dir: dir, Client: registry.New([]registry.Registry{{Name: "fake", URL: reg.URL}}, reg.Client())}
	b := newBench(t, true, false, func(o *Options) { o.Workspace, o.SkillInstaller = ws, in })
	hdr := map[string]string{"X-CSRF-Token": b.csrf()}

	code, body, _ := b.do("GET", "/api/skills/registry?q=weather", "", nil)
	if res, _ := body["results"].([]any); code != 200 || len(res) == 0 {
		t.Fatalf("search: %d %v", code, body)
	}
	if code, _, _ := b.do("POST", "/api/skills/install", `{"name":"weather"}`, nil); code != 403 {
		t.Errorf("install without CSRF: %d, want 403", code)
	}
	code, body, _ = b.do("POST", "/api/skills/install", `{"name":"weather"}`, hdr)
	if code != 200 || body["version"] != "1.0.0" || body["suspicious"] != false {
		t.Fatalf("install weather: %d %v", code, body)
	}
	code, body, _ = b.do("POST", "/api/skills/install", `{"name":"odd"}`, hdr)
	if code != 200 || body["suspicious"] != true {
		t.Errorf("install odd: %d %v, want it installed and marked suspicious", code, body)
	}
	code, body, _ = b.do("POST", "/api/skills/install", `{"name":"stealer"}`, hdr)
	if msg, _ := body["error"].(string); code != 422 || !strings.Contains(msg, "flagged as malware") {
		t.Errorf("install stealer: %d %v, want 422 naming the verdict", code, body)
	}
	if _, err := os.Stat(filepath.Join(dir, "stealer")); !os.IsNotExist(err) {
		t.Errorf("skills/stealer: %v, want none", err)
	}
	if code, body, _ := b.do("DELETE", "/api/skills/weather", "", hdr); code != 200 {
		t.Errorf("remove: %d %v", code, body)
	}
	if _, err := os.Stat(filepath.Join(dir, "weather")); !os.IsNotExist(err) {
		t.Errorf("skills/weather after remove: %v", err)
	}
}
