package web

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// The keyed search APIs nanobot users configure by name. Each is a small
// HTTP client written from the service's public API reference; the request
// and response shapes are pinned by the fakes in backends_keyed_test.go.

// Default endpoints of the keyed backends; SearchOptions.BaseURL overrides
// them.
const (
	DefaultJinaURL       = "https://s.jina.ai/"
	DefaultKagiURL       = "https://kagi.com/api/v1/search"
	DefaultOlostepURL    = "https://api.olostep.com/v1/answers"
	DefaultBochaURL      = "https://api.bochaai.com/v1/web-search"
	DefaultVolcengineURL = "https://open.feedcoopapi.com/search_api/web_search"
	DefaultKeenableURL   = "https://api.keenable.ai/v1/search"
	DefaultSerperURL     = "https://google.serper.dev/search"
)

// postJSON sends payload as a JSON POST to endpoint with the given headers
// and decodes the JSON answer into out.
func postJSON(ctx context.Context, c *http.Client, endpoint string, headers map[string]string, payload, out any) error {
	body, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return doJSON(c, req, out)
}

// bearer is the header of a key sent as a bearer token.
func bearer(key string) map[string]string { return map[string]string{"Authorization": "Bearer " + key} }

// jina is Jina's search endpoint (s.jina.ai): GET /<query>, JSON answer.
type jina struct{ endpoint, key string }

func (j *jina) name() string { return "Jina" }

func (j *jina) search(ctx context.Context, c *http.Client, query string, count int) ([]result, error) {
	u := strings.TrimRight(j.endpoint, "/") + "/" + url.PathEscape(query)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+j.key)
	req.Header.Set("X-Respond-With", "no-content")
	var resp struct {
		Data []struct {
			Title       string `json:"title"`
			URL         string `json:"url"`
			Description string `json:"description"`
			Content     string `json:"content"`
		} `json:"data"`
	}
	if err := doJSON(c, req, &resp); err != nil {
		return nil, err
	}
	out := make([]result, 0, len(resp.Data))
	for _, d := range resp.Data {
		out = append(out, result{Title: d.Title, URL: d.URL, Snippet: cmp.Or(d.Description, truncateRunes(d.Content, 500))})
	}
	return out, nil
}

// kagi is Kagi's search API.
type kagi struct{ endpoint, key string }

func (k *kagi) name() string { return "Kagi" }

func (k *kagi) search(ctx context.Context, c *http.Client, query string, count int) ([]result, error) {
	var resp struct {
		Data struct {
			Search []struct {
				Title   string `json:"title"`
				URL     string `json:"url"`
				Snippet string `json:"snippet"`
			} `json:"search"`
		} `json:"data"`
	}
	if err := postJSON(ctx, c, k.endpoint, bearer(k.key),
		map[string]any{"query": query, "limit": count}, &resp); err != nil {
		return nil, err
	}
	out := make([]result, 0, len(resp.Data.Search))
	for _, d := range resp.Data.Search {
		out = append(out, result{Title: d.Title, URL: d.URL, Snippet: plain(d.Snippet)})
	}
	return out, nil
}

// olostep is Olostep's Answers API: it answers the query and lists the
// sources it used; the answer becomes the first result and each source one
// more.
type olostep struct{ endpoint, key string }

func (o *olostep) name() string { return "Olostep" }

func (o *olostep) search(ctx context.Context, c *http.Client, query string, count int) ([]result, error) {
	var resp struct {
		Result struct {
			Answer      string            `json:"answer"`
			JSONContent string            `json:"json_content"`
			Sources     []json.RawMessage `json:"sources"`
		} `json:"result"`
	}
	if err := postJSON(ctx, c, o.endpoint, bearer(o.key),
		map[string]any{"task": query}, &resp); err != nil {
		return nil, err
	}
	var out []result
	answer := cmp.Or(resp.Result.Answer, resp.Result.JSONContent)
	if answer != "" {
		out = append(out, result{Title: "Olostep answer", Snippet: truncateRunes(answer, 1000)})
	}
	for _, raw := range resp.Result.Sources {
		var src struct {
			Title string `json:"title"`
			URL   string `json:"url"`
		}
		if json.Unmarshal(raw, &src) != nil {
			// Some answers list sources as bare URLs.
			var u string
			if json.Unmarshal(raw, &u) != nil {
				continue
			}
			src.URL = u
		}
		if src.URL == "" {
			continue
		}
		out = append(out, result{Title: cmp.Or(src.Title, src.URL), URL: src.URL})
	}
	return out, nil
}

// bocha is Bocha's web search API.
type bocha struct{ endpoint, key string }

func (b *bocha) name() string { return "Bocha" }

func (b *bocha) search(ctx context.Context, c *http.Client, query string, count int) ([]result, error) {
	var resp struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
		Data struct {
			WebPages struct {
				Value []struct {
					Name    string `json:"name"`
					URL     string `json:"url"`
					Snippet string `json:"snippet"`
					Summary string `json:"summary"`
				} `json:"value"`
			} `json:"webPages"`
		} `json:"data"`
	}
	if err := postJSON(ctx, c, b.endpoint, bearer(b.key),
		map[string]any{"query": query, "count": count, "summary": true, "freshness": "noLimit"}, &resp); err != nil {
		return nil, err
	}
	if resp.Code != 0 && resp.Code != 200 {
		return nil, fmt.Errorf("error %d: %s", resp.Code, resp.Msg)
	}
	out := make([]result, 0, len(resp.Data.WebPages.Value))
	for _, v := range resp.Data.WebPages.Value {
		out = append(out, result{Title: v.Name, URL: v.URL, Snippet: cmp.Or(v.Summary, v.Snippet)})
	}
	return out, nil
}

// volcengine is Volcengine's (ByteDance) web search API.
type volcengine struct{ endpoint, key string }

func (v *volcengine) name() string { return "Volcengine" }

func (v *volcengine) search(ctx context.Context, c *http.Client, query string, count int) ([]result, error) {
	type apiError struct {
		Code    string `json:"Code"`
		Message string `json:"Message"`
	}
	var resp struct {
		ResponseMetadata struct {
			Error *apiError `json:"Error"`
		} `json:"ResponseMetadata"`
		Result struct {
			WebResults []struct {
				Title   string `json:"Title"`
				URL     string `json:"Url"`
				Summary string `json:"Summary"`
				Snippet string `json:"Snippet"`
			} `json:"WebResults"`
		} `json:"Result"`
	}
	if err := postJSON(ctx, c, v.endpoint, bearer(v.key),
		map[string]any{"Query": query, "SearchType": "web", "Count": count, "NeedSummary": true}, &resp); err != nil {
		return nil, err
	}
	if e := resp.ResponseMetadata.Error; e != nil && (e.Code != "" || e.Message != "") {
		return nil, fmt.Errorf("error %s: %s", e.Code, e.Message)
	}
	out := make([]result, 0, len(resp.Result.WebResults))
	for _, r := range resp.Result.WebResults {
		out = append(out, result{Title: r.Title, URL: r.URL, Snippet: cmp.Or(r.Summary, r.Snippet)})
	}
	return out, nil
}

// keenable is Keenable's search API; without a key it uses the public,
// rate-limited endpoint.
type keenable struct{ endpoint, key string }

func (k *keenable) name() string { return "Keenable" }

func (k *keenable) search(ctx context.Context, c *http.Client, query string, count int) ([]result, error) {
	endpoint, headers := k.endpoint, map[string]string{}
	if k.key != "" {
		headers["X-API-Key"] = k.key
	} else {
		endpoint = strings.TrimRight(endpoint, "/") + "/public"
	}
	var resp struct {
		Results []struct {
			Title       string `json:"title"`
			URL         string `json:"url"`
			Snippet     string `json:"snippet"`
			Description string `json:"description"`
		} `json:"results"`
	}
	if err := postJSON(ctx, c, endpoint, headers, map[string]any{"query": query}, &resp); err != nil {
		return nil, err
	}
	out := make([]result, 0, len(resp.Results))
	for _, r := range resp.Results {
		out = append(out, result{Title: r.Title, URL: r.URL, Snippet: cmp.Or(r.Snippet, r.Description)})
	}
	return out, nil
}

// serper is Serper's Google search API.
type serper struct{ endpoint, key string }

func (s *serper) name() string { return "Serper" }

func (s *serper) search(ctx context.Context, c *http.Client, query string, count int) ([]result, error) {
	var resp struct {
		Organic []struct {
			Title   string `json:"title"`
			Link    string `json:"link"`
			Snippet string `json:"snippet"`
		} `json:"organic"`
	}
	if err := postJSON(ctx, c, s.endpoint, map[string]string{"X-API-KEY": s.key},
		map[string]any{"q": query, "num": count}, &resp); err != nil {
		return nil, err
	}
	out := make([]result, 0, len(resp.Organic))
	for _, r := range resp.Organic {
		out = append(out, result{Title: r.Title, URL: r.Link, Snippet: r.Snippet})
	}
	return out, nil
}

// DefaultExaURL is Exa's search endpoint.
const DefaultExaURL = "https://api.exa.ai/search"

// exa is Exa's search API: the key in x-api-key, a short extract of each
// page's text as the snippet.
type exa struct{ endpoint, key string }

func (e *exa) name() string { return "Exa" }

func (e *exa) search(ctx context.Context, c *http.Client, query string, count int) ([]result, error) {
	var resp struct {
		Results []struct {
			Title      string   `json:"title"`
			URL        string   `json:"url"`
			Text       string   `json:"text"`
			Highlights []string `json:"highlights"`
		} `json:"results"`
	}
	payload := map[string]any{"query": query, "numResults": count, "contents": map[string]any{"text": map[string]any{"maxCharacters": 400}}}
	if err := postJSON(ctx, c, e.endpoint, map[string]string{"x-api-key": e.key}, payload, &resp); err != nil {
		return nil, err
	}
	out := make([]result, 0, len(resp.Results))
	for _, r := range resp.Results {
		snippet := r.Text
		if snippet == "" && len(r.Highlights) > 0 {
			snippet = r.Highlights[0]
		}
		out = append(out, result{Title: r.Title, URL: r.URL, Snippet: truncateRunes(strings.Join(strings.Fields(snippet), " "), 300)})
	}
	return out, nil
}

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
