package gateway

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/tools/goals"
)

// TestWorkbenchGoalsInBrowser: the automations page lists the agent's
// goals with their latest progress, and cancelling one there stops it.
func TestWorkbenchGoalsInBrowser(t *testing.T) {
	ctx := browser(t)
	fc := newFake("fake")
	var store *goals.Store
	r := startGatewayOpts(t, testConfig(map[string][]any{"fake": {"*"}}), &echoLLM{}, func(o *Options) {
		o.Channels = webOnly()
		store = goals.NewStore(agent.GoalsFile(o.Paths))
	}, fc)
	now := time.Now()
	err := store.Update(func([]goals.Goal) ([]goals.Goal, error) {
		return []goals.Goal{
			{ID: "g1", SessionKey: "telegram:4242", Channel: "telegram", ChatID: "4242", Objective: "Watch the Lisbon flight price; done under 300 EUR",
				Summary: "Lisbon flight under 300", Status: goals.Active, Created: now.Add(-48 * time.Hour), Updated: now,
				Notes: []goals.Note{{Time: now.Add(-time.Hour), Text: "checked: 320 EUR"}}},
			{ID: "g0", SessionKey: "telegram:4242", Channel: "telegram", ChatID: "4242", Objective: "Get the test suite green",
				Status: goals.Complete, Created: now.Add(-96 * time.Hour), Updated: now.Add(-72 * time.Hour)},
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	signIn(t, ctx, r)
	err = chromedp.Do(ctx,
		chromedp.Navigate("http://"+r.addr+"/#automations"),
		until("the goals", `(() => { const g = document.querySelector('#goal-list .goal[data-goal="g1"]');
			return !!g && g.textContent.includes("Lisbon flight under 300") && g.textContent.includes("checked: 320 EUR")
				&& !!document.querySelector('#goal-list [data-goal="g0"]'); })()`),
	)
	if err != nil {
		t.Fatal(err)
	}
	screenshots(t, ctx, "goals", `!!document.querySelector('#goal-list .goal')`)
	err = chromedp.Do(ctx, click(`#goal-list [data-goal="g1"] button.cancel`),
		until("the goal cancelled", `(() => { const g = document.querySelector('#goal-list [data-goal="g1"]');
			return !!g && g.textContent.includes("cancelled") && !g.querySelector("button.cancel"); })()`))
	if err != nil {
		t.Fatal(err)
	}
	all, err := store.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range all {
		if g.ID == "g1" && g.Status != goals.Cancelled {
			t.Errorf("g1 is %s after the cancel", g.Status)
		}
	}
}
