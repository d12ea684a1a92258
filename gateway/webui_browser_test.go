package gateway

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/crypto/bcrypt"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

// workbenchLLM calls the lookup tool when asked to, then answers with what the
// tool said; otherwise it echoes.
type workbenchLLM struct{ echoLLM }

func (l *workbenchLLM) Stream(ctx context.Context, req providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == "tool" {
		reply := "done: the lookup said **" + strings.SplitN(last.Text(), "\n", 2)[0] + "**"
		onDelta(providers.Delta{Content: reply})
		return &providers.LLMResponse{Content: reply, FinishReason: "stop"}, nil
	}
	if strings.Contains(last.Text(), "use the tool") {
		return &providers.LLMResponse{FinishReason: "tool_calls", ToolCalls: []providers.ToolCallRequest{
			{ID: "call_1", Name: "lookup", Arguments: map[string]any{"q": "weather in Lisbon"}, RawArguments: `{"q":"weather in Lisbon"}`},
		}}, nil
	}
	return l.echoLLM.Stream(ctx, req, onDelta)
}

// workbenchTool answers with a long text, so the history shows "show all".
type workbenchTool struct{}

func (workbenchTool) Name() string        { return "lookup" }
func (workbenchTool) Description() string { return "Look something up." }
func (workbenchTool) Parameters() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}, "required": []any{"q"}}
}
func (workbenchTool) Execute(_ context.Context, args map[string]any) (tools.Result, error) {
	return tools.Result{Content: "sunny, 21 °C\n" + strings.Repeat("station report: calm winds, clear sky\n", 60)}, nil
}

// browser starts headless Chromium at 1280 px and returns its tab.
func browser(t *testing.T) context.Context {
	t.Helper()
	bin := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 860),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, 120*time.Second)
	t.Cleanup(cancelT)
	return ctx
}

// signIn follows the one-time sign-in link the gateway prints, as the
// owner does, waits until the workbench shows, and leaves the page, so the
// test's next Navigate loads a page afresh with the login cookie.
func signIn(t *testing.T, ctx context.Context, r *running) {
	t.Helper()
	err := chromedp.Do(ctx,
		chromedp.Navigate(r.signInURL(t)),
		until("the workbench after the sign-in link", `!document.getElementById("nav").hidden && !location.hash.includes("login")`),
		chromedp.Navigate("about:blank"),
	)
	if err != nil {
		t.Fatalf("sign in: %v", err)
	}
}

// until polls a JavaScript condition in the page. A poll whose page was
// replaced under it (a navigation that had not finished, or the page
// reloading itself: DevTools answers that the execution context is gone)
// starts again in the new page, within the same 30 s.
func until(what, js string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := chromedp.Poll[bool](js, chromedp.WithPollingTimeout(time.Until(deadline)))(ctx, t)
			if err == nil {
				return nil
			}
			if !contextGone(err) || time.Now().After(deadline) {
				return fmt.Errorf("waiting for %s: %w", what, err)
			}
		}
	})
}

// contextGone reports DevTools' answer for an evaluation in a page that
// has since been replaced.
func contextGone(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Cannot find context with specified id") || strings.Contains(msg, "Execution context was destroyed")
}

// click clicks the element sel selects inside the page, in one step: the
// pages re-render lists after each action, so a node found by one
// DevTools call may be gone by the next.
func click(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](`(() => { const e = document.querySelector(` + "`" + sel + "`" + `); if (!e) throw new Error("no element " + ` + "`" + sel + "`" + `); e.click(); })()`)
}

// screenshots captures the page at 1280 px and at 390 px (a phone), into
// docs/webui/<name>-<width>.png when NANOBOT_UPDATE_SCREENSHOTS=1. ready is
// the condition the page must meet at each width before the capture. At
// each width, and at 360 px (the narrowest phone the workbench supports),
// the page must not scroll sideways.
func screenshots(t *testing.T, ctx context.Context, name, ready string) {
	t.Helper()
	for _, w := range []int64{1280, 390, 360} {
		h := int64(860)
		if w < 600 {
			h = 844
		}
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, h), until(fmt.Sprintf("%s at %d px", name, w), ready)); err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		noSideScroll(t, ctx, name, w)
		if w != 360 { // 360 is checked, not pictured
			capture(t, ctx, name, w)
		}
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 860)); err != nil {
		t.Fatal(err)
	}
}

// capture saves the viewport as docs/webui/<name>-<width>.png when
// NANOBOT_UPDATE_SCREENSHOTS=1.
func capture(t *testing.T, ctx context.Context, name string, width int64) {
	t.Helper()
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if os.Getenv("NANOBOT_UPDATE_SCREENSHOTS") == "1" {
		out := filepath.Join("..", "docs", "webui", fmt.Sprintf("%s-%d.png", name, width))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// noSideScroll fails the test when the page is wider than the viewport
// (it would scroll sideways), naming the widest elements.
func noSideScroll(t *testing.T, ctx context.Context, name string, width int64) {
	t.Helper()
	type report struct {
		Scroll int      `json:"scroll"`
		Inner  int      `json:"inner"`
		Wide   []string `json:"wide"`
		// Nav is how far the page menu scrolls inside itself (it must
		// not: a page would hide behind the edge).
		Nav int `json:"nav"`
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[report](`(() => {
		const inner = window.innerWidth, wide = [];
		for (const e of document.querySelectorAll("body *")) {
			const r = e.getBoundingClientRect();
			if (r.width > 0 && r.right > inner + 0.5) wide.push((e.id ? "#" + e.id : e.tagName.toLowerCase() + "." + e.className) + " right=" + Math.round(r.right));
		}
		const nav = document.getElementById("nav");
		return {scroll: document.scrollingElement.scrollWidth, inner, wide: wide.slice(0, 8), nav: nav.scrollWidth - nav.clientWidth};
	})()`))
	if err != nil {
		t.Fatalf("%s at %d px: %v", name, width, err)
	}
	if got.Scroll > got.Inner {
		t.Errorf("%s at %d px scrolls sideways: scrollWidth %d > innerWidth %d; too wide: %v", name, width, got.Scroll, got.Inner, got.Wide)
	}
	if got.Nav > 0 {
		t.Errorf("%s at %d px: the page menu scrolls sideways by %d px", name, width, got.Nav)
	}
}

// seedTelegram stores a Telegram conversation before the gateway starts,
// as the Telegram channel would have.
func seedTelegram(t *testing.T, dir string) {
	t.Helper()
	st, err := session.NewFileStore(dir, session.FileStoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	s, err := st.Load(ctx, "telegram:4242")
	if err != nil {
		t.Fatal(err)
	}
	err = st.Append(ctx, s,
		providers.Message{Role: "user", Content: "Can you write me a **Go** function that adds two numbers?"},
		providers.Message{Role: "assistant", Content: "Sure — here it is:\n\n```go\nfunc add(a, b int) int {\n\treturn a + b\n}\n```\n\n| a | b | add(a, b) |\n|---|---|---|\n| 1 | 2 | 3 |\n\nCall it as `add(1, 2)`."},
	)
	if err != nil {
		t.Fatal(err)
	}
}

// TestWorkbenchInBrowser drives the workbench on a loopback bind (no
// password): the conversations of every channel, a Telegram history
// rendered read-only, then a new web conversation whose answer uses a tool
// (seen live in the activity view and in the stored turn), and a rename
// whose validation error shows on the field.
func TestWorkbenchInBrowser(t *testing.T) {
	ctx := browser(t)
	reg := tools.NewRegistry()
	if err := reg.Register(workbenchTool{}); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(nil)
	cfg.Channels.SendToolHints = true
	r := startGatewayOpts(t, cfg, &workbenchLLM{}, func(o *Options) {
		o.Channels = webOnly()
		o.Tools = reg
		seedTelegram(t, o.Paths.Sessions)
	})
	base := "http://" + r.addr

	// Loopback is not an identity: this machine's browser without the
	// sign-in link sees only how to sign in, and no conversation.
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/"),
		until("the sign-in view", `!document.getElementById("login-view").hidden && document.getElementById("app").hidden && document.getElementById("password-login").hidden`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(".session").length`)); err != nil || n != 0 {
		t.Fatalf("%d sessions listed before signing in (%v)", n, err)
	}
	screenshots(t, ctx, "signin", `!document.getElementById("login-view").hidden`)

	err = chromedp.Do(ctx,
		chromedp.Navigate(r.signInURL(t)),
		until("the telegram conversation in the sidebar", `!!document.querySelector('.session[data-key="telegram:4242"]')`),
		until("the sign-in code gone from the address", `!location.href.includes("login")`),
	)
	if err != nil {
		t.Fatal(err)
	}
	screenshots(t, ctx, "conversations", `document.querySelectorAll(".session").length > 0`)

	// At 360 px the pages are behind one menu button: every page fits on
	// screen when it opens, and picking one closes it.
	err = chromedp.Do(ctx,
		chromedp.EmulateViewport(360, 780),
		until("the menu button", `getComputedStyle(document.getElementById("menu")).display !== "none" && getComputedStyle(document.getElementById("nav")).display === "none"`),
		click("#menu"),
		until("every page inside the screen", `(() => {
			const bs = Array.from(document.querySelectorAll("#nav button"));
			return bs.length >= 6 && bs.every(b => { const r = b.getBoundingClientRect(); return r.width > 0 && r.left >= 0 && r.right <= innerWidth && r.bottom <= innerHeight; });
		})()`),
	)
	if err != nil {
		t.Fatal(err)
	}
	noSideScroll(t, ctx, "menu", 360)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	capture(t, ctx, "menu", 390) // a phone only: wider screens show the pages in a row
	err = chromedp.Do(ctx,
		chromedp.EmulateViewport(360, 780),
		click(`#nav button[data-view="memory-view"]`),
		until("the memory page, the menu closed and named", `!document.getElementById("memory-view").hidden && !document.getElementById("nav").classList.contains("open") && document.getElementById("menu-label").textContent === "Memory"`),
		click("#menu"),
		click(`#nav button[data-view="app"]`),
		until("the chats again", `!document.getElementById("app").hidden && document.getElementById("menu-label").textContent === "Chats"`),
		chromedp.EmulateViewport(1280, 860),
	)
	if err != nil {
		t.Fatal(err)
	}

	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`.session[data-key="telegram:4242"]`)),
		until("the rendered history", `!!document.querySelector("#history .msg.user strong") && !!document.querySelector("#history pre.hl")`),
		until("read-only", `!document.getElementById("readonly").hidden && document.getElementById("composer").hidden`),
	)
	if err != nil {
		t.Fatal(err)
	}
	table, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#history table td").length`))
	if err != nil || table != 3 {
		t.Errorf("the Markdown table has %d cells (%v), want 3", table, err)
	}
	screenshots(t, ctx, "history", `!!document.querySelector("#history pre.hl")`)
	// The theme switch: auto -> dark (kept in localStorage) -> light -> auto.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("theme"))); err != nil {
		t.Fatal(err)
	}
	screenshots(t, ctx, "history-dark", `document.documentElement.dataset.theme === "dark" && getComputedStyle(document.body).backgroundColor === "rgb(17, 20, 24)"`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("theme")), chromedp.Click(chromedp.ID("theme")),
		until("the automatic theme again", `!document.documentElement.dataset.theme`)); err != nil {
		t.Fatal(err)
	}

	// A new web conversation: the answer uses the lookup tool.
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.ID("new-topic")),
		until("connected", `document.getElementById("conn").textContent === "connected"`),
		chromedp.Evaluate[chromedp.Void](`window.__activity = [];
			new MutationObserver(() => { const a = document.querySelector(".tool.live"); if (a) window.__activity.push(a.textContent); })
				.observe(document.getElementById("history"), {childList: true, subtree: true, characterData: true}); 0`),
		chromedp.SendKeys(chromedp.ID("input"), "please use the tool"),
		chromedp.Click(chromedp.ID("send")),
		until("the tool call in the live activity view", `window.__activity.some(t => t.includes("lookup"))`),
		until("the stored turn with the tool call and its result", `(() => {
			const d = document.querySelector("#history details.tool[data-call]");
			return !!d && d.textContent.includes("weather in Lisbon") && d.textContent.includes("sunny, 21")
				&& Array.from(document.querySelectorAll("#history .msg.bot strong")).some(e => e.textContent.includes("sunny, 21"));
		})()`),
		until("the web conversation in the sidebar", `!!document.querySelector('.session[data-key^="web:"]')`),
		chromedp.Click(chromedp.CSS(`#history details.tool[data-call] summary`)),
		until("show all", `Array.from(document.querySelectorAll("#history details.tool button")).some(b => b.textContent.startsWith("show all"))`),
	)
	if err != nil {
		t.Fatal(err)
	}
	screenshots(t, ctx, "chat", `!!document.querySelector("#history details.tool[open]")`)
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#history details.tool button.link`)),
		until("the whole tool output", `document.querySelector("#history details.tool .result").textContent.length > 2000`),
	)
	if err != nil {
		t.Fatal(err)
	}

	// Rename: an empty title is refused on the field, then a good one is
	// shown in the sidebar.
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.ID("rename")),
		chromedp.SetValue(chromedp.ID("rename-input"), "   "),
		chromedp.Click(chromedp.CSS(`#rename-form button[type=submit]`)),
		until("the validation error on the field", `document.getElementById("rename-error").textContent.startsWith("title: want one line")`),
	)
	if err != nil {
		t.Fatal(err)
	}
	screenshots(t, ctx, "rename-error", `document.getElementById("rename-error").textContent !== ""`)
	err = chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("rename-input"), "Weather in Lisbon"),
		chromedp.Click(chromedp.CSS(`#rename-form button[type=submit]`)),
		until("the new title in the sidebar", `Array.from(document.querySelectorAll(".session-title")).some(e => e.textContent === "Weather in Lisbon")`),
	)
	if err != nil {
		t.Fatal(err)
	}

	// Search over the messages' text finds the Telegram conversation (and
	// not the web one), which opens read-only.
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.ID("search"), "adds two numbers"),
		until("only the telegram conversation", `(() => {
			const s = Array.from(document.querySelectorAll(".session"));
			return s.length === 1 && s[0].dataset.key === "telegram:4242";
		})()`),
		click(`.session[data-key="telegram:4242"]`),
		until("its history, read-only", `document.getElementById("pane-title").textContent.startsWith("Can you write me") && !!document.querySelector("#history pre.hl") && document.getElementById("composer").hidden`),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("search").value = ""; 0`),
		chromedp.SendKeys(chromedp.ID("search"), "no conversation says this"),
		until("nothing found", `document.querySelectorAll(".session").length === 0 && !document.getElementById("sessions-empty").hidden`),
	)
	if err != nil {
		t.Fatal(err)
	}
}

// TestWorkbenchLoginInBrowser: beyond loopback the workbench asks for the
// password before it shows anything, and a wrong one is refused on the
// field.
func TestWorkbenchLoginInBrowser(t *testing.T) {
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skipf("cannot listen beyond loopback here: %v", err)
	}
	ctx := browser(t)
	hash, err := bcrypt.GenerateFromPassword([]byte("open sesame, please"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(nil)
	cfg.Gateway.WebUI.Password = string(hash)
	startGatewayOpts(t, cfg, &echoLLM{}, func(o *Options) {
		o.Listener.Close()
		o.Listener = ln
		o.Channels = webOnly()
		seedTelegram(t, o.Paths.Sessions)
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", ln.Addr().(*net.TCPAddr).Port)

	err = chromedp.Do(ctx,
		chromedp.Navigate(base+"/"),
		until("the login form", `!document.getElementById("login-view").hidden && document.getElementById("app").hidden`),
	)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing leaks before the login.
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(".session").length`)); err != nil || n != 0 {
		t.Fatalf("%d sessions listed before login (%v)", n, err)
	}
	screenshots(t, ctx, "login", `!document.getElementById("login-view").hidden`)
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.ID("password"), "guess"),
		chromedp.Click(chromedp.ID("login-submit")),
		until("wrong password on the field", `document.getElementById("login-error").textContent === "wrong password"`),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("password").value = ""; 0`),
		chromedp.SendKeys(chromedp.ID("password"), "open sesame, please"),
		chromedp.Click(chromedp.ID("login-submit")),
		until("the conversations after login", `!!document.querySelector('.session[data-key="telegram:4242"]')`),
		until("the log-out button", `!document.getElementById("logout").hidden`),
	)
	if err != nil {
		t.Fatal(err)
	}

	// The login also lets the browser chat: the web chat's WebSocket takes
	// the login cookie instead of the token (which this page never saw).
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.ID("new-topic")),
		until("connected", `document.getElementById("conn").textContent === "connected"`),
		chromedp.SendKeys(chromedp.ID("input"), "hello from afar"),
		chromedp.Click(chromedp.ID("send")),
		until("the answer", `Array.from(document.querySelectorAll("#history .msg.bot")).some(e => e.textContent.includes("echo: hello from afar"))`),
		until("the stored conversation in the sidebar", `!!document.querySelector('.session[data-key^="web:"]')`),
	)
	if err != nil {
		// What the server stored against what the page shows, for the log.
		state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch("/api/sessions").then(r => r.text()).then(t => t + "\npage list: " + document.getElementById("sessions").innerHTML.slice(0, 500) + "\npage history: " + document.getElementById("history").innerHTML.slice(0, 800))`, chromedp.EvalAwaitPromise))
		t.Logf("stored sessions: %s", state)
		t.Fatal(err)
	}

	// A state change without the CSRF token is refused, login or not.
	status, err := chromedp.Run(ctx, chromedp.Evaluate[int](`fetch("/api/sessions/" + encodeURIComponent("telegram:4242"),
		{method: "PATCH", headers: {"Content-Type": "application/json"}, body: JSON.stringify({title: "hijacked"})}).then(r => r.status)`, chromedp.EvalAwaitPromise))
	if err != nil || status != 403 {
		t.Errorf("PATCH without the CSRF token: HTTP %d (%v), want 403", status, err)
	}

	// A temporary chat: answered, never listed, gone after a reload.
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.ID("new-topic")),
		until("the temporary toggle", `!document.getElementById("temp-toggle").hidden`),
		click("#temporary"),
		until("connected as a temporary chat", `document.getElementById("conn").textContent === "connected" && document.getElementById("pane").classList.contains("temporary")`),
		chromedp.SendKeys(chromedp.ID("input"), "off the record"),
		chromedp.Click(chromedp.ID("send")),
		until("the temporary answer", `Array.from(document.querySelectorAll("#history .msg.bot")).some(e => e.textContent.includes("echo: off the record"))`),
		chromedp.SendKeys(chromedp.ID("input"), "still here?"),
		chromedp.Click(chromedp.ID("send")),
		until("the second temporary answer", `Array.from(document.querySelectorAll("#history .msg.bot")).some(e => e.textContent.includes("echo: still here?"))`),
	)
	if err != nil {
		t.Fatal(err)
	}
	screenshots(t, ctx, "temporary", `document.getElementById("pane").classList.contains("temporary")`)
	err = chromedp.Do(ctx,
		chromedp.Reload(),
		until("the conversations after the reload", `document.querySelectorAll(".session").length === 2`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('.session[data-key^="web:"]').length`)); err != nil || n != 1 {
		t.Errorf("%d web conversations listed after the temporary chat (%v), want 1 (only the stored one)", n, err)
	}
}
