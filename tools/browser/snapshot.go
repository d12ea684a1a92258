package browser

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

//go:embed snapshot.js
var snapshotJS string

//go:embed locate.js
var locateJS string

// pageView is what snapshot.js returns.
type pageView struct {
	Title     string `json:"title"`
	URL       string `json:"url"`
	Text      string `json:"text"`
	Truncated bool   `json:"truncated"`
	Refs      int    `json:"refs"`
	ScrollY   int    `json:"scrollY"`
	Height    int    `json:"height"`
	Viewport  int    `json:"viewport"`
}

// located is what locate.js returns.
type located struct {
	Found    bool    `json:"found"`
	Tag      string  `json:"tag"`
	X        float64 `json:"x"`
	Y        float64 `json:"y"`
	Covered  string  `json:"covered"`
	Select   bool    `json:"select"`
	Editable bool    `json:"editable"`
	NoOption bool    `json:"noOption"`
	Selected string  `json:"selected"`
}

// call runs one of the embedded functions with JSON arguments.
func call[T any](fn string, args ...any) chromedp.Action[T] {
	parts := make([]string, len(args))
	for i, a := range args {
		b, _ := json.Marshal(a)
		parts[i] = string(b)
	}
	return chromedp.Evaluate[T]("(" + fn + ")(" + strings.Join(parts, ",") + ")")
}

// snapshot renders the page for the model. The text comes from the page,
// so it is wrapped as untrusted by the caller.
func snapshot(ctx context.Context, maxChars int) (pageView, error) {
	settle(ctx)
	return chromedp.Run(ctx, call[pageView](snapshotJS, maxChars))
}

// settleWait bounds how long an action waits for a page to finish
// loading before it reads it anyway.
const settleWait = 10 * time.Second

// settle waits until the current document has loaded, or settleWait. A
// page replaced during the wait (a navigation) is waited for afresh. It
// polls from here: an in-page poll waits on animation frames, which a tab
// in the background never gets.
func settle(ctx context.Context) {
	deadline := time.NewTimer(settleWait)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		state, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.readyState`))
		if err == nil && state == "complete" || err != nil && !contextGone(err) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			return
		case <-tick.C:
		}
	}
}

// contextGone reports DevTools' answer for an evaluation in a page that
// was replaced under it.
func contextGone(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Cannot find context with specified id") ||
		strings.Contains(msg, "Execution context was destroyed") ||
		strings.Contains(msg, "Inspected target navigated or closed")
}

// render formats a snapshot for the model.
func render(p pageView) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "Page: %s\nURL: %s\n", p.Title, p.URL)
	if p.Height > p.Viewport && p.Viewport > 0 {
		fmt.Fprintf(&sb, "Scrolled to %d of %d px (viewport %d px).\n", p.ScrollY, p.Height, p.Viewport)
	}
	sb.WriteString("\n")
	if strings.TrimSpace(p.Text) == "" {
		sb.WriteString("(the page shows no text)")
	} else {
		sb.WriteString(p.Text)
	}
	if p.Truncated {
		sb.WriteString("\n… (snapshot cut at its size limit; the rest of the page is not shown)")
	}
	return sb.String()
}
