package browser

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// checkTimeout bounds the DNS lookup of one request's check.
const checkTimeout = 10 * time.Second

// intercept pauses every request of t's pages (each redirect is a new
// request) and answers each with continue or fail after the SSRF check.
// The handler runs until the tab closes.
func (b *Browser) intercept(inst *instance, t *tab) error {
	paused := chromedp.Events(t.ctx, fetch.RequestPaused)
	if _, err := chromedp.Call(t.ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}}); err != nil {
		return fmt.Errorf("browser: intercept requests: %w", err)
	}
	inst.work.Go(func() {
		var pending = make(chan struct{}, 16) // bounds concurrent checks
		for ev, err := range paused {
			if err != nil {
				break
			}
			pending <- struct{}{}
			inst.work.Go(func() {
				defer func() { <-pending }()
				b.decide(t, ev)
			})
		}
	})
	return nil
}

// decide lets one paused request go on or fails it.
func (b *Browser) decide(t *tab, ev fetch.EventRequestPaused) {
	why := b.refuse(t.ctx, ev)
	var err error
	if why == "" {
		_, err = chromedp.Call(t.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
	} else {
		t.noteBlocked(why, ev.ResourceType == network.ResourceTypeDocument)
		b.log.Info("browser: request refused", "session", t.key, "resource", string(ev.ResourceType), "reason", why)
		_, err = chromedp.Call(t.ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
	}
	if err != nil && t.ctx.Err() == nil {
		b.log.Debug("browser: answer a paused request", "err", err)
	}
}

// refuse returns why the request may not be made, or "".
func (b *Browser) refuse(ctx context.Context, ev fetch.EventRequestPaused) string {
	if ev.Request == nil {
		return "a request without a URL"
	}
	raw := ev.Request.URL + ev.Request.URLFragment
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Sprintf("%s: %v", shorten(raw), err)
	}
	switch u.Scheme {
	case "http", "https", "ws", "wss":
	case "data", "blob":
		if ev.ResourceType != network.ResourceTypeDocument {
			return "" // an inline image or script, no network
		}
		return fmt.Sprintf("%s: a page may not be opened from a %s: URL", shorten(raw), u.Scheme)
	default:
		return fmt.Sprintf("%s: only http and https pages may be opened", shorten(raw))
	}
	c := *u
	c.Scheme = map[string]string{"ws": "http", "wss": "https"}[u.Scheme]
	if c.Scheme == "" {
		c.Scheme = u.Scheme
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	if err := b.guard.CheckURL(ctx, &c); err != nil {
		return err.Error()
	}
	return ""
}

// checkNavigation is the policy for a URL the model asks to open, before
// Chromium sees it.
func (b *Browser) checkNavigation(ctx context.Context, raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("not a URL: %w", err)
	}
	if u.Scheme == "" && u.Host == "" && !strings.HasPrefix(raw, "/") {
		// "example.com/x": the model left out the scheme.
		if u, err = url.Parse("https://" + strings.TrimSpace(raw)); err != nil {
			return nil, fmt.Errorf("not a URL: %w", err)
		}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("only http and https pages may be opened, not %s:", u.Scheme)
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	if err := b.guard.CheckURL(ctx, u); err != nil {
		return nil, err
	}
	return u, nil
}

func shorten(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}
