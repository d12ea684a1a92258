package web

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// maxSearchBody caps a search response.
const maxSearchBody = 4 << 20

// doJSON sends req and decodes a JSON response into out.
func doJSON(c *http.Client, req *http.Request, out any) error {
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return unwrapURLError(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSearchBody))
	if err != nil {
		return fmt.Errorf("read response: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("HTTP %s: %s", resp.Status, snippet(body))
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	return nil
}

func snippet(b []byte) string {
	s := oneLine(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

var tags = regexp.MustCompile(`<[^>]*>`)

// plain strips the highlighting markup some APIs put in snippets.
func plain(s string) string { return html.UnescapeString(tags.ReplaceAllString(s, "")) }

// brave is the Brave Search API.
type brave struct{ endpoint, key string }

func (b *brave) name() string { return "Brave" }

func (b *brave) search(ctx context.Context, c *http.Client, query string, count int) ([]result, error) {
	u, err := url.Parse(b.endpoint)
	if err != nil {
		return nil, fmt.Errorf("endpoint: %w", err)
	}
	q := u.Query()
	q.Set("q", query)
	q.Set("count", strconv.Itoa(count))
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Subscription-Token", b.key)
	var resp struct {
		Web struct {
			Results []struct {
				Title       string `json:"title"`
				URL         string `json:"url"`
				Description string `json:"description"`
			} `json:"results"`
		} `json:"web"`
	}
	if err := doJSON(c, req, &resp); err != nil {
		return nil, err
	}
	out := make([]result, 0, len(resp.Web.Results))
	for _, r := range resp.Web.Results {
		out = append(out, result{Title: plain(r.Title), URL: r.URL, Snippet: plain(r.Description)})
	}
	return out, nil
}

// tavily is the Tavily search API.
type tavily struct{ endpoint, key string }

func (t *tavily) name() string { return "Tavily" }

func (t *tavily) search(ctx context.Context, c *http.Client, query string, count int) ([]result, error) {
	var resp contentResults
	if err := postJSON(ctx, c, t.endpoint, bearer(t.key),
		map[string]any{"query": query, "max_results": count, "search_depth": "basic"}, &resp); err != nil {
		return nil, err
	}
	return resp.list(), nil
}

// contentResults is the answer of the APIs that list results as {title,
// url, content}.
type contentResults struct {
	Results []struct {
		Title   string `json:"title"`
		URL     string `json:"url"`
		Content string `json:"content"`
	} `json:"results"`
}

func (cr *contentResults) list() []result {
	out := make([]result, 0, len(cr.Results))
	for _, r := range cr.Results {
		out = append(out, result{Title: r.Title, URL: r.URL, Snippet: r.Content})
	}
	return out
}

// searxng is a SearXNG instance's JSON API (format=json must be enabled in
// the instance's settings).
type searxng struct{ base, key string }

func (s *searxng) name() string { return "SearXNG" }

func (s *searxng) search(ctx context.Context, c *http.Client, query string, count int) ([]result, error) {
	u, err := url.Parse(strings.TrimRight(s.base, "/"))
	if err != nil {
		return nil, fmt.Errorf("base URL: %w", err)
	}
	if !strings.HasSuffix(u.Path, "/search") {
		u.Path += "/search"
	}
	q := u.Query()
	q.Set("q", query)
	q.Set("format", "json")
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	if s.key != "" {
		req.Header.Set("Authorization", "Bearer "+s.key)
	}
	var resp contentResults
	if err := doJSON(c, req, &resp); err != nil {
		return nil, err
	}
	return resp.list(), nil
}
