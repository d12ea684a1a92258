package gateway

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/nanobot-go/nanobot/gateway/cron"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// TestWorkbenchAutomationsInBrowser: a cron job is refused with the error on
// its field, then added, run now (its answer reaches the chat), paused and
// deleted; HEARTBEAT.md is edited.
func TestWorkbenchAutomationsInBrowser(t *testing.T) {
	ctx := browser(t)
	fc := newFake("fake")
	var paths string
	r := startGatewayOpts(t, testConfig(map[string][]any{"fake": {"*"}}), &echoLLM{}, func(o *Options) {
		o.Channels = webOnly()
		paths = o.Paths.Workspace
	}, fc)
	base := "http://" + r.addr
	store := cron.NewStore(filepath.Join(r.dir, "cron", "jobs.json"))
	jobs := func() []cron.Job {
		t.Helper()
		j, err := store.Jobs(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return j
	}

	signIn(t, ctx, r)
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/#automations"),
		until("the automations page", `!document.getElementById("automations-view").hidden && !document.getElementById("jobs-empty").hidden`),
		// No name: refused, the error on the name field.
		chromedp.SendKeys(chromedp.CSS(`#job-form [name=message]`), "water the plants"),
		chromedp.SendKeys(chromedp.CSS(`#job-form [name=target]`), "fake:c9"),
		chromedp.Click(chromedp.ID("job-add")),
		until("the error on the name field", `document.querySelector('#job-form [data-error="name"]').textContent.startsWith("name: ")
			&& document.querySelector('#job-form [name=name]').getAttribute("aria-invalid") === "true"`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(jobs()); n != 0 {
		t.Fatalf("a refused job was stored (%d jobs)", n)
	}
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#job-form [name=name]`), "Plants"),
		chromedp.Click(chromedp.ID("job-add")),
		until("the job listed", `Array.from(document.querySelectorAll("#job-list .job")).some(e => e.textContent.includes("Plants") && e.textContent.includes("every 1h0m0s"))`),
	)
	if err != nil {
		t.Fatal(err)
	}
	list := jobs()
	if len(list) != 1 || list[0].Payload.Channel != "fake" || list[0].Payload.To != "c9" || list[0].Schedule.EveryMs != 3_600_000 {
		t.Fatalf("stored jobs %+v", list)
	}
	id := list[0].ID
	screenshots(t, ctx, "automations", `document.querySelectorAll("#job-list .job").length === 1`)

	// Run now: the cron service fires it, the agent answers in the chat.
	err = chromedp.Do(ctx, click(`#job-list .job[data-job="`+id+`"] button.run`))
	if err != nil {
		t.Fatal(err)
	}
	waitfor.True(t, "the job's answer in its chat", func() bool { return slices.Contains(fc.texts("c9"), "echo: water the plants") })

	err = chromedp.Do(ctx,
		click(`#job-list .job[data-job="`+id+`"] button.toggle`),
		until("paused", `!!document.querySelector('#job-list .job.paused[data-job="`+id+`"]')`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if jobs()[0].Enabled {
		t.Error("the job is still enabled after Pause")
	}
	err = chromedp.Do(ctx,
		click(`#job-list .job[data-job="`+id+`"] button.delete`),
		until("the job gone", `!document.querySelector("#job-list .job") && !document.getElementById("jobs-empty").hidden`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(jobs()); n != 0 {
		t.Errorf("%d jobs left after Delete", n)
	}

	err = chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`document.getElementById("hb-content").value = "- [ ] check the plants\n"; 0`),
		chromedp.Click(chromedp.ID("hb-save")),
		until("saved", `document.getElementById("hb-saved").textContent === "saved"`),
	)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(paths, "HEARTBEAT.md"))
	if err != nil || string(got) != "- [ ] check the plants\n" {
		t.Errorf("HEARTBEAT.md = %q (%v)", got, err)
	}
}
