package gateway

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/nanobot-go/nanobot/agent/skills"
	"github.com/nanobot-go/nanobot/agent/skills/registry"
	"github.com/nanobot-go/nanobot/agent/skills/registry/registrytest"
)

// TestWorkbenchSkillRegistryInBrowser: a skill is found in the (fake)
// registry from the memory page, installed (pinned in the lock file), shown
// with its version, and removed again.
func TestWorkbenchSkillRegistryInBrowser(t *testing.T) {
	ctx := browser(t)
	reg := registrytest.New(t)
	reg.Publish("tide-tables", registrytest.Version{Version: "1.2.0", Archive: registrytest.Zip(t, map[string]string{
		"SKILL.md": registrytest.Skill("tide-tables", "Tide times for any harbour")})})
	var ws string
	r := startGatewayOpts(t, testConfig(nil), &echoLLM{}, func(o *Options) {
		o.Channels = webOnly()
		ws = o.Paths.Workspace
		o.SkillInstaller = &registry.Installer{Dir: filepath.Join(ws, "skills"), Client: registry.New([]registry.Registry{{Name: "fake", URL: reg.URL}}, nil)}
	})
	signIn(t, ctx, r)
	err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+r.addr+"/#memory"),
		until("the memory page", `!document.getElementById("memory-view").hidden`),
		chromedp.SendKeys(chromedp.CSS(`#skill-search [name=q]`), "tide"),
		chromedp.Click(chromedp.CSS(`#skill-search button`)),
		until("the search result", `!!document.querySelector('#skill-results .result[data-skill="tide-tables"]')`),
	)
	if err != nil {
		t.Fatal(err)
	}
	screenshots(t, ctx, "skills", `!!document.querySelector('#skill-results .result')`)
	err = chromedp.Do(ctx,
		click(`#skill-results .result[data-skill="tide-tables"] button.install`),
		until("the installed skill with its version", `(() => { const s = document.querySelector('#skill-list .skill[data-skill="tide-tables"]');
			return !!s && s.textContent.includes("registry 1.2.0"); })()`),
	)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := skills.ReadLock(filepath.Join(ws, "skills"))
	if pin := lock.Skills["tide-tables"]; err != nil || pin.Version != "1.2.0" || pin.ArchiveSHA256 == "" {
		t.Fatalf("lock after the install: %+v %v", lock, err)
	}
	err = chromedp.Do(ctx,
		click(`#skill-list .skill[data-skill="tide-tables"] button.remove`),
		until("the skill gone", `!document.querySelector('#skill-list .skill[data-skill="tide-tables"]')`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ws, "skills", "tide-tables")); err == nil {
		t.Error("the removed skill's folder is still there")
	}
}
