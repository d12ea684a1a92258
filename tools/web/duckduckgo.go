package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// duckDuckGo scrapes DuckDuckGo's key-less HTML endpoint.
type duckDuckGo struct{ endpoint, userAgent string }

func (d *duckDuckGo) name() string { return "DuckDuckGo" }

func (d *duckDuckGo) search(ctx context.Context, c *http.Client, query string, count int) ([]result, error) {
	form := url.Values{"q": {query}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", d.userAgent)
	req.Header.Set("Accept", "text/html")
	resp, err := c.Do(req)
	if err != nil {
		return nil, unwrapURLError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	doc, err := html.Parse(io.LimitReader(resp.Body, maxSearchBody))
	if err != nil {
		return nil, fmt.Errorf("parse results page: %w", err)
	}
	results := parseDuckDuckGo(doc, count)
	if len(results) == 0 && !hasNoResultsNotice(doc) {
		return nil, errors.New("the results page had no results (DuckDuckGo may be rate-limiting; try again later or configure another provider)")
	}
	return results, nil
}

// parseDuckDuckGo reads result blocks: an a.result__a (title and link)
// and a .result__snippet inside each .result, skipping ads.
func parseDuckDuckGo(doc *html.Node, count int) []result {
	var out []result
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if len(out) >= count {
			return
		}
		if n.Type == html.ElementNode && hasClass(n, "result") && !hasClass(n, "result--ad") {
			if r, ok := ddgResult(n); ok {
				out = append(out, r)
			}
			return
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch)
		}
	}
	walk(doc)
	return out
}

func ddgResult(n *html.Node) (result, bool) {
	var r result
	var walk func(*html.Node)
	walk = func(x *html.Node) {
		if x.Type == html.ElementNode {
			switch {
			case x.DataAtom == atom.A && hasClass(x, "result__a") && r.URL == "":
				r.Title = oneLine(textContent(x))
				r.URL = ddgTarget(attr(x, "href"))
			case hasClass(x, "result__snippet") && r.Snippet == "":
				r.Snippet = oneLine(textContent(x))
			}
		}
		for ch := x.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch)
		}
	}
	walk(n)
	return r, r.URL != "" && r.Title != ""
}

// ddgTarget unwraps DuckDuckGo's redirect links (//duckduckgo.com/l/?uddg=...).
func ddgTarget(href string) string {
	u, err := url.Parse(href)
	if err != nil {
		return href
	}
	if target := u.Query().Get("uddg"); target != "" {
		return target
	}
	if u.Scheme == "" && strings.HasPrefix(href, "//") {
		u.Scheme = "https"
	}
	return u.String()
}

func hasNoResultsNotice(doc *html.Node) bool {
	found := false
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if found {
			return
		}
		if n.Type == html.ElementNode && hasClass(n, "no-results") {
			found = true
			return
		}
		for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
			walk(ch)
		}
	}
	walk(doc)
	return found
}

func hasClass(n *html.Node, class string) bool {
	for _, c := range strings.Fields(attr(n, "class")) {
		if c == class {
			return true
		}
	}
	return false
}
