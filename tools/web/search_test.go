package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nanobot-go/nanobot/tools"
)

const ddgPage = `<html><body><div id="links">
<div class="result results_links result--ad"><a class="result__a" href="https://ads.example/">Sponsored</a></div>
<div class="result results_links web-result">
  <h2 class="result__title"><a rel="nofollow" class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fgo.dev%2Fdoc%2F&amp;rut=abc">The <b>Go</b> Programming Language</a></h2>
  <a class="result__snippet" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fgo.dev%2Fdoc%2F">Documentation for   the Go language.</a>
</div>
<div class="result results_links web-result">
  <h2 class="result__title"><a class="result__a" href="https://pkg.go.dev/">Go Packages</a></h2>
  <div class="result__snippet">Discover packages.</div>
</div>
<div class="result results_links web-result">
  <h2 class="result__title"><a class="result__a" href="https://tour.golang.org/">A Tour of Go</a></h2>
</div>
</div></body></html>`

// fakeBackends serves every provider's API and records what it was asked.
type fakeBackends struct {
	srv   *httptest.Server
	calls atomic.Int64
	last  atomic.Value // string: "path query key"
}

func newFakeBackends(t *testing.T) *fakeBackends {
	t.Helper()
	fb := &fakeBackends{}
	mux := http.NewServeMux()
	mux.HandleFunc("/ddg/html/", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		fb.last.Store("ddg q=" + r.PostForm.Get("q") + " method=" + r.Method)
		io.WriteString(w, ddgPage)
	})
	mux.HandleFunc("/ddg-empty/", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `<html><body><div class="no-results">No results.</div></body></html>`)
	})
	mux.HandleFunc("/ddg-blocked/", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `<html><body>Unusual traffic</body></html>`)
	})
	mux.HandleFunc("/brave/res/v1/web/search", func(w http.ResponseWriter, r *http.Request) {
		fb.last.Store("brave q=" + r.URL.Query().Get("q") + " count=" + r.URL.Query().Get("count") + " key=" + r.Header.Get("X-Subscription-Token"))
		if r.Header.Get("X-Subscription-Token") != "brave-key" {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"web": map[string]any{"results": []any{
			map[string]any{"title": "Brave <strong>one</strong>", "url": "https://one.example/", "description": "first &amp; <strong>best</strong>"},
			map[string]any{"title": "Brave two", "url": "https://two.example/", "description": "second"},
		}}})
	})
	mux.HandleFunc("/tavily/search", func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		fb.last.Store("tavily q=" + body["query"].(string) + " auth=" + r.Header.Get("Authorization"))
		json.NewEncoder(w).Encode(map[string]any{"results": []any{
			map[string]any{"title": "Tavily hit", "url": "https://t.example/", "content": "tavily snippet"},
		}})
	})
	mux.HandleFunc("/searx/search", func(w http.ResponseWriter, r *http.Request) {
		fb.last.Store("searx q=" + r.URL.Query().Get("q") + " format=" + r.URL.Query().Get("format"))
		json.NewEncoder(w).Encode(map[string]any{"results": []any{
			map[string]any{"title": "Searx hit", "url": "https://s.example/", "content": "from searx"},
			map[string]any{"title": "Searx hit 2", "url": "https://s2.example/", "content": "more"},
			map[string]any{"title": "Searx hit 3", "url": "https://s3.example/", "content": "more"},
		}})
	})
	fb.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fb.calls.Add(1)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(fb.srv.Close)
	return fb
}

func runSearch(t *testing.T, opts SearchOptions, args map[string]any) (string, error) {
	t.Helper()
	opts.Logger = quiet()
	s, err := NewSearch(opts)
	if err != nil {
		t.Fatal(err)
	}
	r := tools.NewRegistry()
	if err := r.Register(s); err != nil {
		t.Fatal(err)
	}
	res, err := r.Execute(context.Background(), "web_search", args)
	return res.Content, err
}

func TestSearchBackends(t *testing.T) {
	fb := newFakeBackends(t)
	ddgURL := fb.srv.URL + "/ddg/html/"
	tests := []struct {
		name     string
		opts     SearchOptions
		args     map[string]any
		wantCall string
		want     []string
		notWant  []string
	}{
		{"duckduckgo default", SearchOptions{DuckDuckGoURL: ddgURL}, map[string]any{"query": "golang"},
			"ddg q=golang method=POST",
			[]string{"Results for \"golang\" (DuckDuckGo):", "1. The Go Programming Language\n   https://go.dev/doc/\n   Documentation for the Go language.", "2. Go Packages\n   https://pkg.go.dev/\n   Discover packages.", "3. A Tour of Go"},
			[]string{"Sponsored"}},
		{"duckduckgo count", SearchOptions{DuckDuckGoURL: ddgURL}, map[string]any{"query": "golang", "count": "1"},
			"ddg q=golang method=POST", []string{"1. The Go Programming Language"}, []string{"2. Go Packages"}},
		{"brave", SearchOptions{Provider: "brave", APIKey: "brave-key", BaseURL: fb.srv.URL + "/brave/res/v1/web/search"}, map[string]any{"query": "q1", "count": 50},
			"brave q=q1 count=10 key=brave-key", []string{"(Brave)", "1. Brave one\n   https://one.example/\n   first & best", "2. Brave two"}, nil},
		{"brave without key falls back", SearchOptions{Provider: "brave", BaseURL: fb.srv.URL + "/brave/res/v1/web/search", DuckDuckGoURL: ddgURL}, map[string]any{"query": "fallback"},
			"ddg q=fallback method=POST", []string{"(DuckDuckGo)"}, nil},
		{"tavily", SearchOptions{Provider: "Tavily", APIKey: "tv-key", BaseURL: fb.srv.URL + "/tavily/search"}, map[string]any{"query": "q2"},
			"tavily q=q2 auth=Bearer tv-key", []string{"(Tavily)", "1. Tavily hit\n   https://t.example/\n   tavily snippet"}, nil},
		{"tavily without key falls back", SearchOptions{Provider: "tavily", DuckDuckGoURL: ddgURL}, map[string]any{"query": "q3"},
			"ddg q=q3 method=POST", []string{"(DuckDuckGo)"}, nil},
		{"searxng", SearchOptions{Provider: "searxng", BaseURL: fb.srv.URL + "/searx/"}, map[string]any{"query": "q4", "count": 2},
			"searx q=q4 format=json", []string{"(SearXNG)", "1. Searx hit\n   https://s.example/\n   from searx", "2. Searx hit 2"}, []string{"Searx hit 3"}},
		{"searxng without base URL falls back", SearchOptions{Provider: "searxng", DuckDuckGoURL: ddgURL}, map[string]any{"query": "q5"},
			"ddg q=q5 method=POST", []string{"(DuckDuckGo)"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runSearch(t, tt.opts, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if call, _ := fb.last.Load().(string); call != tt.wantCall {
				t.Errorf("backend call = %q, want %q", call, tt.wantCall)
			}
			if !strings.HasPrefix(got, UntrustedNote+"\n<external_content source=") || !strings.HasSuffix(got, "</external_content>") {
				t.Errorf("results not marked as external content:\n%s", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("unexpected %q in:\n%s", w, got)
				}
			}
		})
	}
}

func TestSearchErrors(t *testing.T) {
	fb := newFakeBackends(t)
	if _, err := runSearch(t, SearchOptions{Provider: "brave", APIKey: "wrong", BaseURL: fb.srv.URL + "/brave/res/v1/web/search"}, map[string]any{"query": "x"}); err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Errorf("brave 401: %v", err)
	}
	if _, err := runSearch(t, SearchOptions{DuckDuckGoURL: fb.srv.URL + "/ddg-blocked/"}, map[string]any{"query": "x"}); err == nil || !strings.Contains(err.Error(), "rate-limiting") {
		t.Errorf("ddg blocked: %v", err)
	}
	got, err := runSearch(t, SearchOptions{DuckDuckGoURL: fb.srv.URL + "/ddg-empty/"}, map[string]any{"query": "nothing"})
	if err != nil || got != `No results for "nothing".` {
		t.Errorf("ddg empty: %q, %v", got, err)
	}
	if _, err := NewSearch(SearchOptions{Provider: "bing"}); err == nil {
		t.Error("unknown provider: want error")
	}
	if _, err := runSearch(t, SearchOptions{DuckDuckGoURL: fb.srv.URL + "/ddg/html/"}, map[string]any{}); err == nil || !strings.Contains(err.Error(), "query: missing required property") {
		t.Errorf("missing query: %v", err)
	}
}
