package gateway

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/configs"
)

// TestWorkbenchUsageInBrowser: the usage page draws the ledger: one bar per
// day of the period in both charts, the heartbeat's burn apart, the totals
// ($3.50 + $0.036 priced, one call of unknown price) and the per-model and
// per-channel lists; at phone width and in the dark theme too.
func TestWorkbenchUsageInBrowser(t *testing.T) {
	ctx := browser(t)
	cfg := testConfig(nil)
	r := startGatewayOpts(t, cfg, &echoLLM{}, func(o *Options) { o.Channels = webOnly() })
	loc := cfg.Agents.Defaults.Location()
	now := time.Now().In(loc)
	led, err := usage.Open(context.Background(), UsageDir(configs.PathsFor(filepath.Join(r.dir, "config.json"), &cfg)),
		usage.Options{Worker: "seed", Location: loc})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []usage.Record{
		{Time: now.AddDate(0, 0, -2), Agent: "main", Channel: "telegram", Source: "user", Provider: "openai", Model: "gpt-4o", Input: 1_000_000, Output: 100_000, Outcome: usage.OutcomeOK},
		{Time: now.AddDate(0, 0, -1), Agent: "main", Channel: "cli", Source: "heartbeat", Provider: "openai", Model: "gpt-4o-mini", Input: 200_000, Output: 10_000, Outcome: usage.OutcomeOK},
		{Time: now, Agent: "main", Channel: "web", Source: "cron", Provider: "openai", Model: "mystery", Input: 5000, Output: 500, Outcome: usage.OutcomeOK},
	} {
		if _, err := led.Append(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := led.Close(); err != nil {
		t.Fatal(err)
	}
	bars := func(chart string) string {
		return `document.querySelectorAll("#` + chart + ` g.bar").length === 30`
	}
	signIn(t, ctx, r)
	err = chromedp.Do(ctx,
		chromedp.Navigate("http://"+r.addr+"/#usage"),
		until("30 days of token bars", bars("usage-tokens")),
		until("30 days of cost bars", bars("usage-cost")),
		until("the priced total and the unknown part", `document.getElementById("usage-total-cost").textContent === "$3.54 + ?"`),
		until("the tokens total", `document.getElementById("usage-total-tokens").textContent === "1.3M"`),
		until("the heartbeat apart", `document.getElementById("usage-heartbeat").textContent === "210.0k"`),
		until("a heartbeat segment in one bar only", `document.querySelectorAll("#usage-tokens g.bar rect.seg-heartbeat").length === 1`),
		until("the user's day the tallest", `(() => {
			const h = (sel) => Math.max(...Array.from(document.querySelectorAll("#usage-tokens " + sel)).map(r => +r.getAttribute("height")));
			return h("rect.seg-user") > 4 * h("rect.seg-heartbeat"); })()`),
		until("an unknown price marked on the cost chart", `document.querySelectorAll("#usage-cost .unknown").length === 1`),
		until("three models, gpt-4o first", `(() => { const k = Array.from(document.querySelectorAll("#usage-models .usage-key")).map(e => e.textContent);
			return k.length === 3 && k[0] === "openai/gpt-4o"; })()`),
		until("the channels", `Array.from(document.querySelectorAll("#usage-channels .usage-key")).map(e => e.textContent).sort().join() === "cli,telegram,web"`),
		chromedp.SetValue(chromedp.ID("usage-since"), "7d"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("usage-since").dispatchEvent(new Event("change")); 0`),
		until("7 bars after choosing 7 days", `document.querySelectorAll("#usage-tokens g.bar").length === 7`),
		chromedp.SetValue(chromedp.ID("usage-since"), "30d"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("usage-since").dispatchEvent(new Event("change")); 0`),
		until("30 bars again", bars("usage-tokens")),
	)
	if err != nil {
		t.Fatal(err)
	}
	fits := `(() => { const s = document.getElementById("usage-tokens");
		return s.querySelectorAll("g.bar").length === 30 && +s.getAttribute("width") <= document.documentElement.clientWidth &&
			document.documentElement.scrollWidth <= window.innerWidth; })()`
	screenshots(t, ctx, "usage", fits)
	if err := chromedp.Do(ctx, click("#theme")); err != nil {
		t.Fatal(err)
	}
	screenshots(t, ctx, "usage-dark", fits+` && document.documentElement.dataset.theme === "dark" && getComputedStyle(document.querySelector("#usage-tokens rect.seg-heartbeat")).fill === "rgb(251, 191, 36)"`)
}
