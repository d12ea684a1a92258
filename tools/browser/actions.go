package browser

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
	"github.com/nanobot-go/nanobot/internal/untrusted"
	"github.com/nanobot-go/nanobot/tools"
)

// do runs one action on t. call is the tool call's context (DNS checks
// run under it); ctx is the tab's, bounded by the action timeout.
func (b *Browser) do(call, ctx context.Context, t *tab, action string, a tools.Args) (tools.Result, error) {
	// A tab in the background gets no animation frames, which pages and
	// screenshots wait for.
	if _, err := chromedp.Call(ctx, page.BringToFront, cdp.Empty{}); err != nil {
		return tools.Result{}, err
	}
	switch action {
	case "navigate":
		return b.navigate(call, ctx, t, a.String("url"))
	case "snapshot":
		p, err := snapshot(ctx, b.opts.MaxSnapshotChars)
		if err != nil {
			return tools.Result{}, err
		}
		return tools.Result{Content: untrusted.Wrap("browser "+p.URL, render(p))}, nil
	case "click":
		return b.click(ctx, t, normRef(a.String("ref")))
	case "type":
		return b.typeText(ctx, t, normRef(a.String("ref")), a.String("text"), a.Bool("submit", false))
	case "scroll":
		return b.scroll(ctx, normRef(a.String("ref")), a.String("direction"))
	case "screenshot":
		return b.screenshot(ctx, a.Bool("full_page", false))
	case "pdf":
		return b.pdf(ctx)
	case "back":
		return b.back(ctx, t)
	}
	return tools.Result{}, fmt.Errorf("unknown action %q", action)
}

// RefusedError is a page or request the SSRF policy refused.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return "refused by the browser's network policy: " + e.Reason }

func (b *Browser) navigate(call, ctx context.Context, t *tab, raw string) (tools.Result, error) {
	u, err := b.checkNavigation(call, raw)
	if err != nil {
		return tools.Result{}, &RefusedError{Reason: err.Error()}
	}
	t.takeBlocked()
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(u.String()))
	if err != nil {
		if page, _ := t.takeBlocked(); page != "" {
			// A redirect went where it may not.
			return tools.Result{}, &RefusedError{Reason: page}
		}
		return tools.Result{}, fmt.Errorf("open %s: %w", u.Redacted(), err)
	}
	settle(ctx)
	status := ""
	if resp != nil && resp.Status != 0 {
		status = fmt.Sprintf(" (HTTP %d)", resp.Status)
	}
	return tools.Result{Content: fmt.Sprintf("Opened %s%s.%s Call snapshot to read it.\n%s", u.Redacted(), status, b.blockedNote(t), b.where(ctx))}, nil
}

// where describes the current page briefly: its title comes from the
// page, so it is wrapped as untrusted.
func (b *Browser) where(ctx context.Context) string {
	title, _ := chromedp.Run(ctx, chromedp.Title())
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	return untrusted.Wrap("browser "+loc, "Title: "+title+"\nURL: "+loc)
}

// noRef is the answer for a reference the page does not have.
func noRef(ref string) error {
	return fmt.Errorf("no element %s on the page: references belong to the latest snapshot, and the page may have changed; take a new snapshot", ref)
}

func (b *Browser) locate(ctx context.Context, ref, action, text string) (located, error) {
	l, err := chromedp.Run(ctx, call[located](locateJS, ref, action, text))
	if err != nil {
		return l, err
	}
	if !l.Found {
		return l, noRef(ref)
	}
	return l, nil
}

func (b *Browser) click(ctx context.Context, t *tab, ref string) (tools.Result, error) {
	l, err := b.locate(ctx, ref, "click", "")
	if err != nil {
		return tools.Result{}, err
	}
	t.takeBlocked()
	mark := t.nav.mark()
	if err := chromedp.Do(ctx, chromedp.MouseClickXY(l.X, l.Y)); err != nil {
		return tools.Result{}, err
	}
	t.nav.after(ctx, mark)
	settle(ctx)
	msg := fmt.Sprintf("Clicked %s (%s).", ref, l.Tag)
	if l.Covered != "" {
		msg += " Another element was on top of it and may have taken the click: " + l.Covered + "."
	}
	return tools.Result{Content: msg + b.blockedNote(t) + "\n" + b.where(ctx)}, nil
}

// blockedNote tells the model about a request the policy refused during
// an action that otherwise worked (a link to a private address, say).
func (b *Browser) blockedNote(t *tab) string {
	page, sub := t.takeBlocked()
	switch {
	case page != "":
		return " The page tried to open another page the network policy refused: " + page + "."
	case sub != "":
		return " The page tried to load something the network policy refused: " + sub + "."
	}
	return ""
}

func (b *Browser) typeText(ctx context.Context, t *tab, ref, text string, submit bool) (tools.Result, error) {
	l, err := b.locate(ctx, ref, "type", text)
	if err != nil {
		return tools.Result{}, err
	}
	msg := ""
	switch {
	case l.Select:
		if l, err = b.locate(ctx, ref, "select", text); err != nil {
			return tools.Result{}, err
		}
		if l.NoOption {
			return tools.Result{}, fmt.Errorf("%s has no option %q; the snapshot lists its options", ref, text)
		}
		msg = fmt.Sprintf("Chose %q in %s.", l.Selected, ref)
	case !l.Editable:
		return tools.Result{}, fmt.Errorf("%s is a <%s>, not a text field", ref, l.Tag)
	default:
		keys := text
		if keys == "" {
			keys = kb.Backspace // the selected text goes
		}
		if err := chromedp.Do(ctx, chromedp.KeyEvent(keys)); err != nil {
			return tools.Result{}, err
		}
		msg = fmt.Sprintf("Typed %d characters into %s.", len([]rune(text)), ref)
	}
	t.takeBlocked()
	if submit {
		mark := t.nav.mark()
		if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Enter)); err != nil {
			return tools.Result{}, err
		}
		msg += " Pressed Enter."
		t.nav.after(ctx, mark)
		settle(ctx)
	}
	return tools.Result{Content: msg + b.blockedNote(t) + "\n" + b.where(ctx)}, nil
}

func (b *Browser) scroll(ctx context.Context, ref, direction string) (tools.Result, error) {
	if ref != "" {
		if _, err := b.locate(ctx, ref, "scroll", ""); err != nil {
			return tools.Result{}, err
		}
	} else {
		js := map[string]string{
			"up":     "window.scrollBy(0, -0.8 * window.innerHeight)",
			"down":   "window.scrollBy(0, 0.8 * window.innerHeight)",
			"top":    "window.scrollTo(0, 0)",
			"bottom": "window.scrollTo(0, document.documentElement.scrollHeight)",
		}[direction]
		if js == "" {
			return tools.Result{}, fmt.Errorf("direction %q: want up, down, top or bottom", direction)
		}
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](js)); err != nil {
			return tools.Result{}, err
		}
	}
	pos, err := chromedp.Run(ctx, chromedp.Evaluate[[3]int](`[Math.round(scrollY), Math.round(document.documentElement.scrollHeight), innerHeight]`))
	if err != nil {
		return tools.Result{}, err
	}
	return tools.Result{Content: fmt.Sprintf("Scrolled to %d of %d px (viewport %d px). Take a snapshot or a screenshot to see it.", pos[0], pos[1], pos[2])}, nil
}

func (b *Browser) screenshot(ctx context.Context, full bool) (tools.Result, error) {
	settle(ctx)
	shot := chromedp.CaptureScreenshot()
	if full {
		shot = chromedp.FullScreenshot(100) // 100 means PNG
	}
	png, err := chromedp.Run(ctx, shot)
	if err != nil {
		return tools.Result{}, err
	}
	p, err := b.save("png", png)
	if err != nil {
		return tools.Result{}, err
	}
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	return tools.Result{
		Content: fmt.Sprintf("Screenshot of %s saved to %s (%d KB). To show it in the chat, send that path with the message tool's files.", loc, p, (len(png)+1023)/1024),
		Images:  []tools.Image{{MIMEType: "image/png", Data: png}},
	}, nil
}

func (b *Browser) pdf(ctx context.Context) (tools.Result, error) {
	settle(ctx)
	doc, err := chromedp.Run(ctx, chromedp.PrintToPDF(chromedp.PDFPrintBackground()))
	if err != nil {
		return tools.Result{}, err
	}
	p, err := b.save("pdf", doc)
	if err != nil {
		return tools.Result{}, err
	}
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	return tools.Result{Content: fmt.Sprintf("Saved %s as a PDF: %s (%d KB). Send it with the message tool's files.", loc, p, (len(doc)+1023)/1024)}, nil
}

func (b *Browser) back(ctx context.Context, t *tab) (tools.Result, error) {
	h, err := chromedp.Run(ctx, chromedp.NavigationEntries())
	if err != nil {
		return tools.Result{}, err
	}
	if h.CurrentIndex <= 0 {
		return tools.Result{}, errors.New("there is no earlier page in this tab")
	}
	t.takeBlocked()
	mark := t.nav.mark()
	// Not chromedp.NavigateBack: it waits for a load event, and a page
	// restored from the back-forward cache fires none.
	if _, err := chromedp.Call(ctx, page.NavigateToHistoryEntry, page.NavigateToHistoryEntryParams{EntryID: h.Entries[h.CurrentIndex-1].ID}); err != nil {
		return tools.Result{}, err
	}
	t.nav.after(ctx, mark)
	settle(ctx)
	return tools.Result{Content: "Went back." + b.blockedNote(t) + "\n" + b.where(ctx)}, nil
}

// save writes a screenshot or PDF 0600 into OutDir and returns its path.
func (b *Browser) save(ext string, data []byte) (string, error) {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	p := filepath.Join(b.opts.OutDir, "browser-"+time.Now().UTC().Format("20060102-150405")+"-"+hex.EncodeToString(rnd[:])+"."+ext)
	if err := atomicfile.Write(p, data, 0o600); err != nil {
		return "", fmt.Errorf("save: %w", err)
	}
	return p, nil
}
