package gateway

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/gateway/relay"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// TestWorkbenchChannelsInBrowser: the channels page shows each channel's
// health (one keeps failing), a stranger's pairing request is approved in
// the browser, and the running gateway then answers that stranger.
func TestWorkbenchChannelsInBrowser(t *testing.T) {
	ctx := browser(t)
	fc := newFake("fake")
	broken := newFake("telegram")
	broken.failRuns.Store(1 << 20)
	cfg := testConfig(map[string][]any{"fake": {}, "telegram": {"*"}})
	r := startGatewayOpts(t, cfg, &echoLLM{}, func(o *Options) { o.Channels = webOnly() }, fc, broken)
	base := "http://" + r.addr

	// A stranger writes; the gate answers with a pairing code.
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c77", SenderID: "u77", Content: "hi there", MessageID: "1"}
	waitfor.True(t, "the pairing code reply", func() bool {
		got := fc.texts("c77")
		return len(got) == 1 && strings.Contains(got[0], "pairing code")
	})
	store := relay.NewPairingStore(filepath.Join(r.dir, "state", "pairing.json"))
	if n := len(store.Pending()); n != 1 {
		t.Fatalf("%d pairing requests, want 1", n)
	}
	code := store.Pending()[0].Code

	signIn(t, ctx, r)
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/#channels"),
		until("the channel cards", `!!document.querySelector('.card[data-channel="web"] .dot.connected')`),
		until("the failing channel with its error", `(() => { const c = document.querySelector('.card[data-channel="telegram"]');
			return !!c && c.textContent.includes("platform unreachable") && !!c.querySelector(".dot.reconnecting, .dot.connecting"); })()`),
		until("the pairing request", `!!document.querySelector('#pending-list .row[data-code="`+code+`"]')`),
	)
	if err != nil {
		t.Fatal(err)
	}
	screenshots(t, ctx, "channels", `!!document.querySelector('#pending-list .row')`)
	err = chromedp.Do(ctx,
		click(`#pending-list .row[data-code="`+code+`"] button.approve`),
		until("the sender approved", `!!document.querySelector('#approved-list .row[data-sender="fake:u77"]') && !document.querySelector('#pending-list .row')`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !store.IsApproved("fake", "u77") {
		t.Fatal("the approval did not reach pairing.json")
	}
	// The running gateway obeys: the stranger is answered now.
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c77", SenderID: "u77", Content: "hello again", MessageID: "2"}
	waitfor.True(t, "the answer to the approved sender", func() bool {
		return slices.Contains(fc.texts("c77"), "echo: hello again")
	})

	// Revoke: the next message asks for pairing again.
	err = chromedp.Do(ctx,
		click(`#approved-list .row[data-sender="fake:u77"] button.revoke`),
		until("the approval gone", `!document.querySelector('#approved-list .row') && !document.getElementById("approved-empty").hidden`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if store.IsApproved("fake", "u77") {
		t.Fatal("the revocation did not reach pairing.json")
	}
	fc.in <- bus.Inbound{Channel: "fake", ChatID: "c77", SenderID: "u77", Content: "still there?", MessageID: "3"}
	waitfor.True(t, "a new pairing code", func() bool { return len(store.Pending()) == 1 })
	if slices.Contains(fc.texts("c77"), "echo: still there?") {
		t.Error("a revoked sender was answered")
	}
}
