package gateway

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// TestWorkbenchSettingsInBrowser: a channel's allowFrom changed on the
// settings page lands in config.json and the running gateway obeys it at
// once; a refused value shows its error on its field and changes nothing.
func TestWorkbenchSettingsInBrowser(t *testing.T) {
	ctx := browser(t)
	fc := newFake("fake")
	var file string
	r := startGatewayOpts(t, testConfig(map[string][]any{"fake": {"u1"}}), &echoLLM{}, func(o *Options) {
		o.Channels = webOnly()
		file = o.Paths.ConfigFile
		if err := configs.Save(file, o.Config); err != nil {
			t.Fatal(err)
		}
	}, fc)
	base := "http://" + r.addr

	// u2 is not allowed yet: the gate hands out a pairing code instead.
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c2", SenderID: "u2", Content: "anyone there?", MessageID: "1"}
	waitfor.True(t, "the pairing reply to u2", func() bool {
		got := fc.texts("c2")
		return len(got) == 1 && strings.Contains(got[0], "pairing code")
	})

	allow := `#settings [data-path="channels.fake.allowFrom"]`
	signIn(t, ctx, r)
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/#settings"),
		until("the settings", `!!document.querySelector('`+allow+`')`),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('`+allow+`').value = "u1\nu2"; 0`),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('`+allow+`').closest("form").requestSubmit(); 0`),
		until("saved and applied", `Array.from(document.querySelectorAll(".save-status")).some(e => e.textContent.includes("Applied now: channels.fake.allowFrom"))`),
	)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var tree struct {
		Channels map[string]json.RawMessage `json:"channels"`
	}
	var fake struct {
		AllowFrom []string `json:"allowFrom"`
	}
	if err := json.Unmarshal(raw, &tree); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(tree.Channels["fake"], &fake); err != nil {
		t.Fatal(err)
	}
	if got := fake.AllowFrom; !slices.Equal(got, []string{"u1", "u2"}) {
		t.Fatalf("config.json allowFrom = %v, want [u1 u2]", got)
	}
	if _, err := os.Stat(file + ".bak"); err != nil {
		t.Errorf("no config.json.bak: %v", err)
	}
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c2", SenderID: "u2", Content: "now?", MessageID: "2"}
	waitfor.True(t, "the answer to u2", func() bool { return slices.Contains(fc.texts("c2"), "echo: now?") })

	// A refused value: the error on its field, the file untouched.
	interval := `#settings [data-path="gateway.heartbeat.intervalS"]`
	err = chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#settings [data-path="gateway.heartbeat.enabled"]`)),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('`+interval+`').value = "5"; document.querySelector('`+interval+`').closest("form").requestSubmit(); 0`),
		until("the error on the interval field", `document.querySelector('[data-error="gateway.heartbeat.intervalS"]').textContent.startsWith("gateway.heartbeat.intervalS: want at least 10 seconds")
			&& document.querySelector('`+interval+`').getAttribute("aria-invalid") === "true"`),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('`+interval+`').scrollIntoView({block: "center"}); 0`),
	)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(file)
	if string(after) != string(raw) {
		t.Error("a refused change was written to config.json")
	}
	screenshots(t, ctx, "settings-error", `document.querySelector('[data-error="gateway.heartbeat.intervalS"]').textContent !== ""`)
	err = chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0); document.getElementById("settings-view").scrollTop = 0; 0`))
	if err != nil {
		t.Fatal(err)
	}
	screenshots(t, ctx, "settings", `!!document.querySelector('`+allow+`')`)
}
