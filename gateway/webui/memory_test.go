package webui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMemoryAndSkillsAPI(t *testing.T) {
	ws := t.TempDir()
	skill := filepath.Join(ws, "skills", "needs-tool")
	if err := os.MkdirAll(skill, 0o755); err != nil {
		t.Fatal(err)
	}
	doc := "---\nname: needs-tool\ndescription: Needs a tool nobody has.\nrequires: {bins: [no-such-binary-xyz-123], env: [NO_SUCH_ENV_XYZ_123]}\n---\nBody.\n"
	if err := os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	b := newBench(t, true, false, func(o *Options) { o.Workspace = ws })

	code, body, _ := b.do("GET", "/api/memory", "", nil)
	if code != 200 || body["content"] != "" || body["capTokens"] != float64(memoryCapTokens) {
		t.Fatalf("empty memory: %d %v", code, body)
	}
	hdr := map[string]string{"X-CSRF-Token": b.csrf()}
	if code, _, _ := b.do("PUT", "/api/memory", `{"content":"x"}`, nil); code != 403 {
		t.Errorf("PUT without CSRF: %d, want 403", code)
	}
	code, body, _ = b.do("PUT", "/api/memory", `{"content":"# Facts\n- likes tea\n"}`, hdr)
	if code != 200 || body["tokens"].(float64) <= 0 || body["overCap"] != false {
		t.Fatalf("PUT memory: %d %v", code, body)
	}
	got, err := os.ReadFile(filepath.Join(ws, "memory", "MEMORY.md"))
	if err != nil || string(got) != "# Facts\n- likes tea\n" {
		t.Fatalf("MEMORY.md = %q (%v)", got, err)
	}
	big := `{"content":"` + strings.Repeat("word ", 40000) + `"}`
	if code, body, _ := b.do("PUT", "/api/memory", big, hdr); code != 400 || body["path"] != "content" {
		t.Errorf("oversized memory: %d %v", code, body)
	}

	code, body, _ = b.do("GET", "/api/skills", "", nil)
	if code != 200 {
		t.Fatalf("skills: %d %v", code, body)
	}
	var found map[string]any
	for _, s := range body["skills"].([]any) {
		if s.(map[string]any)["name"] == "needs-tool" {
			found = s.(map[string]any)
		}
	}
	if found == nil || found["available"] != false || len(found["missing"].([]any)) != 2 || found["source"] != "workspace" {
		t.Errorf("needs-tool skill %v, want unavailable with 2 missing requirements", found)
	}
	if n := len(body["skills"].([]any)); n < 2 {
		t.Errorf("%d skills, want the built-ins too", n)
	}
}
