package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/nanobot-go/nanobot/channels/telegram"
	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/setup"
)

// TestWorkbenchSetupInBrowser walks the setup page from no config file at
// all: the chats page says to finish setting up; a wrong provider key is
// refused by the provider (nothing saved), the right one is checked and
// saved (the file is 0600 and holds it); a Telegram token is checked
// against the Telegram fake and saved with who may talk; the password is
// set, by keyboard alone; the last step names what waits for a restart
// and how to restart; and the banner on the chats says the restart is
// pending until the running gateway has them.
func TestWorkbenchSetupInBrowser(t *testing.T) {
	ctx := browser(t)
	const rightKey, wrongKey = "sk-right-setup-0123456789abcdef", "sk-wrong-setup-0123456789abcdef"
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" || r.Header.Get("Authorization") != "Bearer "+rightKey {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"my-model"},{"id":"my-other-model"}]}`))
	}))
	t.Cleanup(llm.Close)
	tg := telegramtest.New(t)

	var file string
	r := startGatewayOpts(t, configs.Default(), &echoLLM{}, func(o *Options) {
		o.Channels = webOnly()
		o.Platforms = map[string]any{"telegram": telegram.DefaultConfig()}
		o.Setup = &setup.Checker{TelegramBase: tg.URL}
		file = o.Paths.ConfigFile
	})
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("the test wants no config file at the start: %v", err)
	}
	base := "http://" + r.addr
	step := `#setup .setup-step`
	saved := `document.querySelector("` + step + ` .check-result.ok")?.textContent.startsWith("Saved.")`

	signIn(t, ctx, r)
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/"),
		until("the banner", `!document.getElementById("setup-banner").hidden
			&& document.getElementById("setup-banner-text").textContent.includes("no model provider")
			&& document.getElementById("setup-banner-text").textContent.includes("no chat channel")`),
		click("#setup-banner-go"),
		until("the model step", `!document.getElementById("setup-view").hidden && !!document.getElementById("setup-provider")
			&& document.querySelector('.steps [aria-current="step"]').dataset.step === "model"`),
		setValue("setup-provider", "vllm"),
		setValue("setup-apiBase", llm.URL+"/v1"),
		setValue("setup-model", ""),
		chromedp.SendKeys(chromedp.ID("setup-model"), "my-model"),
		chromedp.SendKeys(chromedp.ID("setup-key"), wrongKey),
		click(step+` button[type=submit]`),
		until("the refusal", `document.querySelector("`+step+` .check-result.bad")?.textContent === "✗ vLLM: the key was refused (HTTP 401)"
			&& !document.querySelector("`+step+` .anyway").hidden`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("a refused key was saved (%v)", err)
	}

	err = chromedp.Do(ctx,
		setValue("setup-key", ""),
		chromedp.SendKeys(chromedp.ID("setup-key"), rightKey),
		click(step+` .actions button.secondary`), // Check
		until("the check", `document.querySelector("`+step+` .check-result.ok")?.textContent === "✓ vLLM answered: 2 models"
			&& document.querySelectorAll("#setup-models option").length === 2`),
		// The models it listed are named and offered; one typed that it
		// did not list is pointed out.
		until("the listed models", `document.getElementById("setup-model-hint").textContent === "vLLM listed 2 models: my-model, my-other-model."
			&& !document.getElementById("setup-model-picks").hidden && document.querySelectorAll("#setup-model-picks option").length === 3`),
		setValue("setup-model", "not-listed"),
		until("the unlisted model named", `document.getElementById("setup-model-hint").textContent.endsWith("It did not list not-listed.")`),
		setValue("setup-model-picks", "my-model"),
		until("the picked model", `document.getElementById("setup-model").value === "my-model" && !document.getElementById("setup-model-hint").textContent.includes("did not list")`),
	)
	if err != nil {
		t.Fatal(err)
	}
	screenshots(t, ctx, "setup", `!!document.querySelector("`+step+` .check-result.ok")`)
	// Eight pages fit in a row from 901 px; below, they are behind the
	// menu button: at neither edge does the page scroll sideways.
	for _, w := range []int64{721, 900, 901} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(w, 860)); err != nil {
			t.Fatal(err)
		}
		noSideScroll(t, ctx, "setup", w)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 860)); err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(ctx,
		click(step+` button[type=submit]`),
		until("saved", saved+` && document.querySelector('.steps [data-step="model"]').classList.contains("complete")`),
		// Without a reload, the step says what is saved now, that the
		// running gateway has it after a restart, and that a key is set.
		until("the step's intro refreshed", `document.querySelector("`+step+` .step-intro").textContent.startsWith("Now: my-model through vllm")
			&& document.querySelector("`+step+` .step-intro").textContent.includes("after a restart")
			&& document.getElementById("setup-key").placeholder === "set (empty keeps it)"`),
	)
	if err != nil {
		t.Fatal(err)
	}
	tree := readConfig(t, file)
	for path, want := range map[string]any{
		"providers.vllm.apiKey": rightKey, "providers.vllm.apiBase": llm.URL + "/v1",
		"agents.defaults.provider": "vllm", "agents.defaults.model": "my-model",
	} {
		if got := configs.GetPath(tree, path); got != want {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config.json: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}

	err = chromedp.Do(ctx,
		click(step+` .next`),
		until("the channel step", `!!document.getElementById("setup-token") && document.querySelector('#setup input[value="telegram"]').checked
			&& document.activeElement.classList.contains("step-heading")`),
		chromedp.SendKeys(chromedp.ID("setup-token"), telegramtest.Token),
		chromedp.SendKeys(chromedp.ID("setup-allowFrom"), "4242"),
		click(step+` .actions button.secondary`),
		until("the bot's name", `document.querySelector("`+step+` .check-result.ok")?.textContent === "✓ Telegram knows this bot: @`+telegramtest.BotUsername+`"`),
		click(step+` button[type=submit]`),
		until("saved", saved),
	)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tg.Calls("getMe")); n != 1 {
		t.Errorf("Telegram got %d getMe calls, want 1 (a save right after a check does not ask again)", n)
	}
	tree = readConfig(t, file)
	for path, want := range map[string]any{"channels.telegram.token": telegramtest.Token, "channels.telegram.enabled": true} {
		if got := configs.GetPath(tree, path); got != want {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
	if got, _ := json.Marshal(configs.GetPath(tree, "channels.telegram.allowFrom")); string(got) != `["4242"]` {
		t.Errorf("channels.telegram.allowFrom = %s", got)
	}

	err = chromedp.Do(ctx,
		click(step+` .next`),
		until("the password step", `!!document.getElementById("setup-password")`),
		// By keyboard: Enter in a box submits its step, and after the save
		// the focus is on Next.
		chromedp.SendKeys(chromedp.ID("setup-password"), "correct horse battery"),
		chromedp.SendKeys(chromedp.ID("setup-again"), "correct horse battery"+kb.Enter),
		until("saved, Next focused", saved+` && document.activeElement.classList.contains("next")`),
		chromedp.KeyEvent(kb.Enter),
		until("the done step", `document.querySelector('.steps [aria-current="step"]').dataset.step === "done"
			&& document.querySelector("`+step+`").textContent.includes("nanobot gateway restart")
			&& document.querySelector("`+step+`").textContent.includes("channels.telegram")
			&& document.querySelector("`+step+` .summary").textContent.includes("Workbench password set")
			&& document.querySelectorAll("`+step+` .summary .badge.ok").length === 3`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := configs.GetPath(readConfig(t, file), "gateway.webui.password").(string); !strings.HasPrefix(h, "$2") {
		t.Errorf("gateway.webui.password = %q, want a bcrypt hash", h)
	}
	screenshots(t, ctx, "setup-done", `!!document.querySelector("`+step+` .summary")`)

	// Nothing essential is missing from the file now, but the running
	// gateway has neither the provider nor the channel until a restart:
	// the chats page says so, and its button leads to how to restart. No
	// key or token is anywhere in the page.
	err = chromedp.Do(ctx,
		click(step+` > button`),
		until("the chats with the restart pending", `!document.getElementById("app").hidden && !document.getElementById("setup-banner").hidden
			&& document.getElementById("setup-banner-text").textContent.includes("the model provider and the chat channel saved, waiting for a restart of the gateway")
			&& !document.getElementById("setup-banner-text").textContent.includes("no model provider")
			&& document.getElementById("setup-banner-go").textContent === "How to restart"`),
		click("#setup-banner-go"),
		until("the done step", `!document.getElementById("setup-view").hidden && document.querySelector('.steps [aria-current="step"]').dataset.step === "done"
			&& document.querySelector("`+step+`").textContent.includes("/restart")`),
	)
	if err != nil {
		t.Fatal(err)
	}
	page, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML + Array.from(document.querySelectorAll("input")).map(i => i.value).join(" ")`))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{rightKey, wrongKey, telegramtest.Token} {
		if strings.Contains(page, secret) {
			t.Errorf("the page holds a secret (%.12s…)", secret)
		}
	}
}

func readConfig(t *testing.T, file string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var tree map[string]any
	if err := json.Unmarshal(raw, &tree); err != nil {
		t.Fatal(err)
	}
	return tree
}

// setValue sets the value of the element with id and tells the page, as
// a change by hand would.
func setValue(id, v string) chromedp.Action[chromedp.Void] {
	js, _ := json.Marshal(v)
	return chromedp.Evaluate[chromedp.Void](`(() => { const e = document.getElementById("` + id + `"); e.value = ` + string(js) + `; e.dispatchEvent(new Event("input", {bubbles: true})); e.dispatchEvent(new Event("change", {bubbles: true})); })()`)
}
