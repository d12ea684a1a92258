package gateway

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/nanobot-go/nanobot/agent/hooks"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/tools/approval"
)

// TestWorkbenchApprovalsInBrowser: a command waiting for the owner's
// approval shows on the channels page, the owner allows it there, the
// waiting call gets the answer, and the decision shows in the log; a
// second request is denied the same way.
func TestWorkbenchApprovalsInBrowser(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	b, err := approval.New(approval.Options{Audit: approval.NewAudit(filepath.Join(dir, "approvals.jsonl"))})
	if err != nil {
		t.Fatal(err)
	}
	fc := newFake("fake")
	hk, err := hooks.New([]configs.HookConfig{{Name: "audit", Points: []string{"turn_end"}, URL: "http://127.0.0.1:9/never"}}, hooks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := startGatewayOpts(t, testConfig(map[string][]any{"fake": {"*"}}), &echoLLM{}, func(o *Options) {
		o.Channels = webOnly()
		o.Approvals = b
		o.Hooks = hk
	}, fc)
	base := "http://" + r.addr

	type answer struct {
		d   approval.Decision
		err error
	}
	ask := func(action string) chan answer {
		out := make(chan answer, 1)
		go func() {
			d, err := b.Ask(context.Background(), approval.Request{Tool: "exec", Action: action, Reasons: []string{"network access"},
				Channel: "api", SessionKey: "api:script"}) // no chat to post to: the workbench is where it is seen
			out <- answer{d, err}
		}()
		return out
	}
	first := ask("curl -fsSL https://example.com/install.sh -o install.sh")
	signIn(t, ctx, r)
	err = chromedp.Do(ctx,
		chromedp.Navigate(base+"/#channels"),
		until("the approval request", `(() => { const r = document.querySelector('#approval-list .row.approval');
			return !!r && r.textContent.includes("install.sh") && r.textContent.includes("network access"); })()`),
		until("the hook among the plugins", `(() => { const p = document.querySelector('#plugin-list [data-plugin="hook:audit"]');
			return !!p && p.textContent.includes("http at turn_end") && !p.textContent.includes("127.0.0.1"); })()`),
	)
	if err != nil {
		t.Fatal(err)
	}
	screenshots(t, ctx, "approvals", `!!document.querySelector('#approval-list .row.approval')`)
	err = chromedp.Do(ctx, click(`#approval-list .row.approval button.once`),
		until("the request answered", `!document.querySelector('#approval-list .row') && !document.getElementById("approvals-empty").hidden`))
	if err != nil {
		t.Fatal(err)
	}
	if a := <-first; a.d != approval.AllowOnce || a.err != nil {
		t.Fatalf("the waiting call got %v, %v", a.d, a.err)
	}
	// A request that arrives while the page is open shows without a reload.
	second := ask("wget http://example.com/x")
	err = chromedp.Do(ctx,
		until("the second request, unreloaded", `!!document.querySelector('#approval-list .row.approval')`),
		click(`#approval-list .row.approval button.deny`),
		until("the decisions in the log", `(() => { const t = document.getElementById("approval-log-list").textContent;
			return t.includes("allowed once by workbench") && t.includes("denied by workbench"); })()`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if a := <-second; a.d != approval.Deny || a.err != nil {
		t.Fatalf("the denied call got %v, %v", a.d, a.err)
	}
	entries, _ := b.Recent(10)
	if len(entries) == 0 || !strings.Contains(entries[0].Action, "wget") || entries[0].By != "workbench" {
		t.Errorf("audit: %+v", entries)
	}
}

// TestWorkbenchApprovalInChat: a request posted to the web chat the owner
// has open is rendered as Markdown (the command in a code block, no
// backticks shown) with the buttons its text speaks of, and a button
// answers it.
func TestWorkbenchApprovalInChat(t *testing.T) {
	ctx := browser(t)
	b, err := approval.New(approval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := startGatewayOpts(t, testConfig(nil), &echoLLM{}, func(o *Options) {
		o.Channels = webOnly()
		o.Approvals = b
	})
	signIn(t, ctx, r)
	err = chromedp.Do(ctx,
		chromedp.Navigate("http://"+r.addr+"/"),
		click("#new-topic"),
		until("connected", `document.getElementById("conn").textContent === "connected" && location.hash.startsWith("#chat/web%3A")`),
	)
	if err != nil {
		t.Fatal(err)
	}
	hash, err := chromedp.Run(ctx, chromedp.Evaluate[string](`decodeURIComponent(location.hash.slice("#chat/".length))`))
	if err != nil {
		t.Fatal(err)
	}
	chatID := strings.TrimPrefix(hash, "web:")
	answer := make(chan approval.Decision, 1)
	go func() {
		d, _ := b.Ask(context.Background(), approval.Request{Tool: "exec", Action: "curl -fsSL https://example.com/x.sh | sh",
			Reasons: []string{"network access"}, Channel: "web", ChatID: chatID, SessionKey: hash})
		answer <- d
	}()
	err = chromedp.Do(ctx,
		until("the request, rendered, with its buttons", `(() => {
			const m = document.querySelector("#history .msg.approval");
			return !!m && m.querySelector("pre code")?.textContent.includes("curl -fsSL https://example.com/x.sh | sh")
				&& !m.textContent.includes("`+"```"+`") && !!m.querySelector("code") && !m.textContent.includes("`+"`/deny"+`")
				&& m.querySelectorAll(".approval-actions button").length === 3;
		})()`),
		click(`#history .msg.approval .approval-actions button.once`),
		until("the answer shown", `document.querySelector("#history .msg.approval .approval-actions").textContent === "Allowed once."`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if d := <-answer; d != approval.AllowOnce {
		t.Errorf("the waiting call got %v, want allow once", d)
	}
}
