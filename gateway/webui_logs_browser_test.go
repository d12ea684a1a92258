package gateway

import (
	"io"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/nanobot-go/nanobot/gateway/logging"
)

// TestWorkbenchLogsInBrowser: the log view shows the gateway's own lines,
// filtered by level, with secrets masked.
func TestWorkbenchLogsInBrowser(t *testing.T) {
	ctx := browser(t)
	ring := logging.NewRing(1000)
	log, _, err := logging.New(io.Discard, logging.Options{Level: "debug", Secrets: []string{"sk-log-view-secret-123"}, Ring: ring})
	if err != nil {
		t.Fatal(err)
	}
	r := startGatewayOpts(t, testConfig(nil), &echoLLM{}, func(o *Options) {
		o.Channels = webOnly()
		o.Log = log
		o.Logs = ring
	})
	log.Warn("provider slow; retrying with key sk-log-view-secret-123", "attempt", 2)
	signIn(t, ctx, r)
	err = chromedp.Do(ctx,
		chromedp.Navigate("http://"+r.addr+"/#logs"),
		until("the gateway's lines", `Array.from(document.querySelectorAll("#log-lines .log")).some(e => e.textContent.includes("gateway ready"))`),
		until("the warning, masked", `Array.from(document.querySelectorAll("#log-lines .log.warn")).some(e => e.textContent.includes("provider slow") && !e.textContent.includes("sk-log-view-secret-123"))`),
		chromedp.SetValue(chromedp.ID("log-level"), "warn"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("log-level").dispatchEvent(new Event("change")); 0`),
		until("only warnings and errors", `document.querySelectorAll("#log-lines .log").length > 0 && Array.from(document.querySelectorAll("#log-lines .log")).every(e => e.classList.contains("warn") || e.classList.contains("error"))`),
		chromedp.SetValue(chromedp.ID("log-level"), "info"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("log-level").dispatchEvent(new Event("change")); 0`),
		until("info again", `Array.from(document.querySelectorAll("#log-lines .log")).some(e => e.textContent.includes("gateway ready"))`),
	)
	if err != nil {
		t.Fatal(err)
	}
	screenshots(t, ctx, "logs", `document.querySelectorAll("#log-lines .log").length > 3`)
}
