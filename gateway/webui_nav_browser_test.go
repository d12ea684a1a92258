package gateway

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/providers"
)

// consoleErrors records what the tab reports as an error from now on:
// console.error calls, uncaught exceptions, and the browser's own error
// entries (a resource answered 404 or 401). The func it returns lists them.
func consoleErrors(t *testing.T, ctx context.Context) func() []string {
	t.Helper()
	var mu sync.Mutex
	var got []string
	add := func(s string) { mu.Lock(); got = append(got, s); mu.Unlock() }
	if err := chromedp.Do(ctx); err != nil { // open the tab, so no event of its start is missed
		t.Fatal(err)
	}
	err := chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				var args []string
				for _, a := range e.Args {
					args = append(args, a.Description+string(a.Value))
				}
				add("console.error: " + strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			add("exception: " + e.ExceptionDetails.Text)
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError {
				add(e.Entry.Text + " " + e.Entry.URL)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, cdplog.Enable, cdp.Empty{})
		return err
	}))
	if err != nil {
		t.Fatal(err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

// historyStep goes one entry back (-1) or forward (+1) in the tab's
// history as the browser's own buttons do, without waiting for a page
// load: between the workbench's pages there is none.
func historyStep(delta int64) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		h, err := cdp.Call(ctx, tg, page.GetNavigationHistory, cdp.Empty{})
		if err != nil {
			return err
		}
		i := h.CurrentIndex + delta
		if i < 0 || i >= int64(len(h.Entries)) {
			return errors.New("no history entry there")
		}
		_, err = cdp.Call(ctx, tg, page.NavigateToHistoryEntry, page.NavigateToHistoryEntryParams{EntryID: h.Entries[i].ID})
		return err
	})
}

// seedTaskList stores a Telegram conversation whose answer holds a task
// list and a table with a short column beside a long one.
func seedTaskList(t *testing.T, dir string) {
	t.Helper()
	st, err := session.NewFileStore(dir, session.FileStoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	s, err := st.Load(ctx, "telegram:777")
	if err != nil {
		t.Fatal(err)
	}
	err = st.Append(ctx, s,
		providers.Message{Role: "user", Content: "What is left to do?"},
		providers.Message{Role: "assistant", Content: "- [x] done\n- [ ] buy milk\n\n" +
			"| count | notes |\n|---|---|\n| 3 | " + strings.Repeat("a long note that goes on and on ", 6) + "|"},
	)
	if err != nil {
		t.Fatal(err)
	}
}

// shown is the condition that the page element id is visible.
func shown(id string) string { return `!document.getElementById("` + id + `").hidden` }

// TestWorkbenchNavigationInBrowser: every page and every opened
// conversation is a history entry: Back and Forward move between them
// without leaving the workbench (on a phone, Back from a conversation
// returns to the list), and an address's #page opens that page, typed or
// loaded. A task list renders with its checkbox on the line of its text,
// and a table's short header does not wrap letter by letter on a phone.
// Log out leaves no Log out button behind. No page logs an error to the
// console on the way (the favicon included).
func TestWorkbenchNavigationInBrowser(t *testing.T) {
	ctx := browser(t)
	errs := consoleErrors(t, ctx)
	r := startGatewayOpts(t, testConfig(nil), &echoLLM{}, func(o *Options) {
		o.Channels = webOnly()
		seedTelegram(t, o.Paths.Sessions)
		seedTaskList(t, o.Paths.Sessions)
	})
	base := "http://" + r.addr
	signIn(t, ctx, r)

	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/"),
		until("the chats", `!!document.querySelector('.session[data-key="telegram:4242"]')`),
	)
	if err != nil {
		t.Fatal(err)
	}
	// Headless Chromium asks for no icon; a browser with a tab strip asks
	// for the one the page links, or for /favicon.ico. Both are there (a
	// 404 would be among the console's errors).
	icons, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`Promise.all([document.querySelector('link[rel="icon"]')?.href, "/favicon.ico"]
		.map((u) => fetch(u).then((r) => r.headers.get("Content-Type") === "image/svg+xml" ? r.status : -r.status)))`, chromedp.EvalAwaitPromise))
	if err != nil || len(icons) != 2 || icons[0] != 200 || icons[1] != 200 {
		t.Errorf("the linked icon and /favicon.ico: %v (%v), want 200 and 200 with an SVG", icons, err)
	}

	err = chromedp.Do(ctx,
		click(`#nav button[data-view="channels-view"]`),
		until("the channels page", shown("channels-view")+` && location.hash === "#channels"`),
		click(`#nav button[data-view="memory-view"]`),
		until("the memory page", shown("memory-view")+` && location.hash === "#memory"`),
		historyStep(-1),
		until("the channels page after Back", shown("channels-view")+` && document.getElementById("memory-view").hidden
			&& location.origin + "/" === "`+base+`/" && document.querySelector("#nav button.active").dataset.view === "channels-view"`),
		historyStep(-1),
		until("the chats after Back", shown("app")+` && document.getElementById("channels-view").hidden && location.origin + "/" === "`+base+`/"`),
		historyStep(+1),
		until("the channels page after Forward", shown("channels-view")),
		// An address typed with a page's hash opens that page.
		chromedp.Evaluate[chromedp.Void](`location.hash = "#usage"; 0`),
		until("the usage page from the address", shown("usage-view")+` && document.getElementById("channels-view").hidden
			&& document.querySelector("#nav button.active").dataset.view === "usage-view"`),
		historyStep(-1),
		until("the channels page after Back", shown("channels-view")),
		chromedp.Navigate(base+"/#logs"),
		until("the logs page on load", shown("logs-view")+` && document.getElementById("app").hidden`),
	)
	if err != nil {
		t.Fatal(err)
	}

	// On a phone: the list, a conversation, Back (the gesture) returns to
	// the list, not out of the workbench; the conversation's address
	// opens it again.
	err = chromedp.Do(ctx,
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(base+"/"),
		until("the list", `!!document.querySelector('.session[data-key="telegram:777"]')`),
		click(`.session[data-key="telegram:777"]`),
		until("the conversation", `document.getElementById("app").classList.contains("show-pane") && !!document.querySelector("#history .msg.bot li")
			&& location.hash === "#chat/telegram%3A777"`),
	)
	if err != nil {
		t.Fatal(err)
	}

	// The task list's checkboxes sit on their text's line, left of it, at
	// a checkbox's size; the table's short header stays on one line.
	type box struct {
		Checks, Inline int
		Header         float64
		Line           float64
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[box](`(() => {
		const out = {checks: 0, inline: 0};
		for (const cb of document.querySelectorAll("#history .msg li > input[type=checkbox]")) {
			out.checks++;
			const text = document.createRange();
			text.selectNodeContents(cb.parentElement);
			text.setStartAfter(cb);
			const c = cb.getBoundingClientRect(), x = text.getBoundingClientRect();
			const mid = (r) => (r.top + r.bottom) / 2;
			if (c.width > 0 && c.width < 30 && c.right <= x.left + 1 && Math.abs(mid(c) - mid(x)) < 8) out.inline++;
		}
		const th = Array.from(document.querySelectorAll("#history .msg th")).find((e) => e.textContent === "count");
		out.header = th ? th.getBoundingClientRect().height : -1;
		out.line = parseFloat(getComputedStyle(th || document.body).lineHeight);
		return out;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Checks != 2 || got.Inline != 2 {
		t.Errorf("task list: %d checkboxes, %d on their text's line left of it; want 2 and 2", got.Checks, got.Inline)
	}
	if got.Header < 0 || got.Header > 2*got.Line+8 {
		t.Errorf("the table's \"count\" header is %.0f px high at 390 px (line %.0f px): it wraps", got.Header, got.Line)
	}
	noSideScroll(t, ctx, "task list", 390)

	err = chromedp.Do(ctx,
		historyStep(-1),
		until("the list after Back", shown("app")+` && !document.getElementById("app").classList.contains("show-pane")
			&& location.origin + "/" === "`+base+`/" && !!document.querySelector('.session[data-key="telegram:777"]')`),
		historyStep(+1),
		until("the conversation after Forward", `document.getElementById("app").classList.contains("show-pane") && !!document.querySelector("#history .msg.bot li")`),
		click("#back"),
		until("the list after ←", `!document.getElementById("app").classList.contains("show-pane")`),
		chromedp.EmulateViewport(1280, 860),
	)
	if err != nil {
		t.Fatal(err)
	}

	// Log out: the sign-in page has no Log out button.
	err = chromedp.Do(ctx,
		click("#logout"),
		until("the sign-in page without Log out", shown("login-view")+` && document.getElementById("logout").hidden
			&& getComputedStyle(document.getElementById("logout")).display === "none" && document.getElementById("nav").hidden`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if e := errs(); len(e) > 0 {
		t.Errorf("the console logged errors:\n%s", strings.Join(e, "\n"))
	}
}
