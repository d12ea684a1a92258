package gateway

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestWorkbenchMemoryInBrowser: MEMORY.md is shown against its cap and
// saved from the page; the skills list says which requirements are missing.
func TestWorkbenchMemoryInBrowser(t *testing.T) {
	ctx := browser(t)
	var ws string
	r := startGatewayOpts(t, testConfig(nil), &echoLLM{}, func(o *Options) {
		o.Channels = webOnly()
		ws = o.Paths.Workspace
		dir := filepath.Join(ws, "skills", "deploy")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		doc := "---\nname: deploy\ndescription: Deploys the site with a tool this machine lacks.\nrequires: {bins: [no-such-deploy-tool-xyz]}\n---\nRun it.\n"
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	signIn(t, ctx, r)
	err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+r.addr+"/#memory"),
		until("the skills", `!!document.querySelector('#skill-list .skill.unavailable[data-skill="deploy"] .req.missing')`),
		until("the memory size", `document.getElementById("mem-size").textContent.includes("of 8000 tokens")`),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("mem-content").value = "# Preferences\n- answers in English\n- likes short replies\n"; 0`),
		chromedp.Click(chromedp.ID("mem-save")),
		until("saved", `document.getElementById("mem-saved").textContent === "saved"`),
	)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(ws, "memory", "MEMORY.md"))
	if err != nil || string(got) != "# Preferences\n- answers in English\n- likes short replies\n" {
		t.Fatalf("MEMORY.md = %q (%v)", got, err)
	}
	screenshots(t, ctx, "memory", `document.querySelectorAll("#skill-list .skill").length > 1`)
}
