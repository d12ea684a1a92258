package browser

import (
	"bytes"
	"fmt"
	"html"
	"image/png"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// shop is the test site: a page with a heading, a button that changes a
// text, a search form, a hidden text and a link; /search answers the form.
func shop() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><html><head><title>Test shop</title></head><body>
<h1>Welcome to the shop</h1>
<p>Fresh bread every <b>morning</b>.</p>
<button onclick="document.getElementById('out').textContent = 'the button was pressed'">Press me</button>
<div id="out">nothing pressed yet</div>
<form action="/search"><input name="q" aria-label="Search the shop"><button>Go</button></form>
<div style="display:none">hidden secret words</div>
<a href="/about">About us</a>
<div style="height:3000px"></div><p>the very end</p>
</body></html>`)
	})
	mux.HandleFunc("/search", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><title>Results</title><p>You searched for: %s</p>`, html.EscapeString(r.URL.Query().Get("q")))
	})
	return mux
}

// TestNavigateSnapshotClickTypeScreenshot drives a page the way a model
// does: open it, read it, press a button, fill and send a form, take a
// picture, save a PDF, go back.
func TestNavigateSnapshotClickTypeScreenshot(t *testing.T) {
	base := serve(t, site, shop())
	b := newBrowser(t, siteOnly)
	tool := b.Tool("ws")
	ctx := session("telegram:1")

	began := time.Now()
	res := run(t, ctx, tool, map[string]any{"action": "navigate", "url": base + "/"})
	t.Logf("first navigate, Chromium start included: %s", time.Since(began).Round(time.Millisecond))
	if !strings.Contains(res.Content, "HTTP 200") || !strings.Contains(res.Content, "Test shop") {
		t.Errorf("navigate said:\n%s", res.Content)
	}
	logMemory(t, b)

	snap := run(t, ctx, tool, map[string]any{"action": "snapshot"}).Content
	for _, want := range []string{"<external_content", "# Welcome to the shop", "Fresh bread every morning.", "nothing pressed yet", `link "About us" -> /about`} {
		if !strings.Contains(snap, want) {
			t.Errorf("snapshot lacks %q:\n%s", want, snap)
		}
	}
	if strings.Contains(snap, "hidden secret") {
		t.Errorf("snapshot shows hidden text:\n%s", snap)
	}

	press := refOf(t, snap, `button "Press me"`)
	run(t, ctx, tool, map[string]any{"action": "click", "ref": press})
	if snap = run(t, ctx, tool, map[string]any{"action": "snapshot"}).Content; !strings.Contains(snap, "the button was pressed") {
		t.Errorf("after the click the snapshot shows:\n%s", snap)
	}

	box := refOf(t, snap, `textbox "Search the shop"`)
	res = run(t, ctx, tool, map[string]any{"action": "type", "ref": box, "text": "rye bread", "submit": true})
	if !strings.Contains(res.Content, "/search?q=rye+bread") {
		t.Errorf("after typing and Enter the tab is not on the results:\n%s", res.Content)
	}
	if snap = run(t, ctx, tool, map[string]any{"action": "snapshot"}).Content; !strings.Contains(snap, "You searched for: rye bread") {
		t.Errorf("results snapshot:\n%s", snap)
	}

	res = run(t, ctx, tool, map[string]any{"action": "screenshot"})
	if len(res.Images) != 1 || res.Images[0].MIMEType != "image/png" {
		t.Fatalf("screenshot images: %d", len(res.Images))
	}
	img, err := png.Decode(bytes.NewReader(res.Images[0].Data))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if bb := img.Bounds(); bb.Dx() < 100 || bb.Dy() < 100 {
		t.Errorf("screenshot is %v", bb)
	}
	saved := regexp.MustCompile(`saved to (\S+\.png)`).FindStringSubmatch(res.Content)
	if saved == nil {
		t.Fatalf("screenshot result names no file:\n%s", res.Content)
	}
	if data, err := os.ReadFile(saved[1]); err != nil || !bytes.Equal(data, res.Images[0].Data) {
		t.Errorf("saved screenshot %s: %v", saved[1], err)
	}
	if fi, err := os.Stat(saved[1]); err == nil && fi.Mode().Perm() != 0o600 {
		t.Errorf("screenshot mode %v, want 0600", fi.Mode().Perm())
	}

	res = run(t, ctx, tool, map[string]any{"action": "pdf"})
	pdf := regexp.MustCompile(`: (\S+\.pdf)`).FindStringSubmatch(res.Content)
	if pdf == nil {
		t.Fatalf("pdf result names no file:\n%s", res.Content)
	}
	if data, err := os.ReadFile(pdf[1]); err != nil || !bytes.HasPrefix(data, []byte("%PDF")) {
		t.Errorf("saved PDF %s: %v", pdf[1], err)
	}

	res = run(t, ctx, tool, map[string]any{"action": "back"})
	if !strings.Contains(res.Content, "Test shop") {
		t.Errorf("back did not return to the shop:\n%s", res.Content)
	}
	res = run(t, ctx, tool, map[string]any{"action": "scroll", "direction": "bottom"})
	if strings.Contains(res.Content, "Scrolled to 0 ") {
		t.Errorf("scroll to the bottom stayed at the top: %s", res.Content)
	}

	// A reference from an older page is refused with a way out.
	if _, err := tool.Execute(ctx, map[string]any{"action": "click", "ref": "e999"}); err == nil || !strings.Contains(err.Error(), "take a new snapshot") {
		t.Errorf("unknown ref: %v", err)
	}
	if res = run(t, ctx, tool, map[string]any{"action": "close"}); !strings.Contains(res.Content, "Closed") || b.Tabs() != 0 {
		t.Errorf("close: %s, %d tabs", res.Content, b.Tabs())
	}
}
