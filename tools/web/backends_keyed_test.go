package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// keyedFake serves the keyed search APIs with the request and response
// shapes of their public references. A request with the wrong method,
// credential or body is refused, so a client that drifts from the API fails
// here.
func keyedFake(t *testing.T) (*httptest.Server, func() string) {
	t.Helper()
	var mu sync.Mutex
	var last string
	record := func(s string) { mu.Lock(); last = s; mu.Unlock() }
	body := func(r *http.Request) map[string]any {
		var m map[string]any
		json.NewDecoder(r.Body).Decode(&m)
		return m
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jina/{q}", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer jina-key" || r.Header.Get("Accept") != "application/json" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		record("jina q=" + r.PathValue("q"))
		json.NewEncoder(w).Encode(map[string]any{"code": 200, "data": []any{
			map[string]any{"title": "Jina hit", "url": "https://j.example/", "description": "jina snippet", "content": ""},
		}})
	})
	mux.HandleFunc("POST /kagi", func(w http.ResponseWriter, r *http.Request) {
		b := body(r)
		if r.Header.Get("Authorization") != "Bearer kagi-key" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		record("kagi q=" + b["query"].(string) + " limit=" + jsonNum(b["limit"]))
		json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"search": []any{
			map[string]any{"title": "Kagi hit", "url": "https://k.example/", "snippet": "kagi <b>snippet</b>"},
		}}})
	})
	mux.HandleFunc("POST /olostep", func(w http.ResponseWriter, r *http.Request) {
		b := body(r)
		if r.Header.Get("Authorization") != "Bearer olo-key" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		record("olostep task=" + b["task"].(string))
		json.NewEncoder(w).Encode(map[string]any{"id": "answer_1", "result": map[string]any{
			"answer":  "Paris is the capital.",
			"sources": []any{map[string]any{"title": "Wiki", "url": "https://w.example/"}, "https://bare.example/"},
		}})
	})
	mux.HandleFunc("POST /bocha", func(w http.ResponseWriter, r *http.Request) {
		b := body(r)
		if r.Header.Get("Authorization") != "Bearer bocha-key" || b["summary"] != true {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		record("bocha q=" + b["query"].(string) + " count=" + jsonNum(b["count"]))
		json.NewEncoder(w).Encode(map[string]any{"code": 200, "msg": nil, "data": map[string]any{"webPages": map[string]any{"value": []any{
			map[string]any{"name": "Bocha hit", "url": "https://b.example/", "snippet": "short", "summary": "long summary"},
		}}}})
	})
	mux.HandleFunc("POST /volc", func(w http.ResponseWriter, r *http.Request) {
		b := body(r)
		if r.Header.Get("Authorization") != "Bearer volc-key" {
			json.NewEncoder(w).Encode(map[string]any{"ResponseMetadata": map[string]any{"Error": map[string]any{"Code": "InvalidAuth", "Message": "bad key"}}})
			return
		}
		record("volcengine q=" + b["Query"].(string) + " type=" + b["SearchType"].(string) + " count=" + jsonNum(b["Count"]))
		json.NewEncoder(w).Encode(map[string]any{"ResponseMetadata": map[string]any{}, "Result": map[string]any{"WebResults": []any{
			map[string]any{"Title": "Volc hit", "Url": "https://v.example/", "Summary": "volc summary"},
		}}})
	})
	mux.HandleFunc("POST /keenable", func(w http.ResponseWriter, r *http.Request) {
		b := body(r)
		if r.Header.Get("X-API-Key") != "keen-key" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		record("keenable q=" + b["query"].(string))
		json.NewEncoder(w).Encode(map[string]any{"results": []any{map[string]any{"title": "Keen hit", "url": "https://kn.example/", "snippet": "keen"}}})
	})
	mux.HandleFunc("POST /keenable/public", func(w http.ResponseWriter, r *http.Request) {
		b := body(r)
		record("keenable-public q=" + b["query"].(string) + " key=" + r.Header.Get("X-API-Key"))
		json.NewEncoder(w).Encode(map[string]any{"results": []any{map[string]any{"title": "Public hit", "url": "https://p.example/", "description": "public"}}})
	})
	mux.HandleFunc("POST /serper", func(w http.ResponseWriter, r *http.Request) {
		b := body(r)
		if r.Header.Get("X-API-KEY") != "serper-key" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		record("serper q=" + b["q"].(string) + " num=" + jsonNum(b["num"]))
		json.NewEncoder(w).Encode(map[string]any{"organic": []any{map[string]any{"title": "Serper hit", "link": "https://s.example/", "snippet": "serp", "position": 1}}})
	})
	mux.HandleFunc("POST /exa", func(w http.ResponseWriter, r *http.Request) {
		b := body(r)
		contents, _ := b["contents"].(map[string]any)
		if r.Header.Get("x-api-key") != "exa-key" || contents["text"] == nil {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		record("exa q=" + b["query"].(string) + " numResults=" + jsonNum(b["numResults"]))
		json.NewEncoder(w).Encode(map[string]any{"requestId": "r1", "results": []any{
			map[string]any{"title": "Exa hit", "url": "https://e.example/", "id": "https://e.example/", "text": "exa  page\ntext"},
			map[string]any{"title": "Exa second", "url": "https://e2.example/", "id": "https://e2.example/", "highlights": []any{"a highlight"}},
		}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, func() string { mu.Lock(); defer mu.Unlock(); return last }
}

func jsonNum(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestKeyedSearchBackends(t *testing.T) {
	srv, last := keyedFake(t)
	tests := []struct {
		provider, key, path, wantCall string
		want                          []string
	}{
		{"jina", "jina-key", "/jina/", "jina q=go tips", []string{"(Jina)", "1. Jina hit\n   https://j.example/\n   jina snippet"}},
		{"kagi", "kagi-key", "/kagi", "kagi q=go tips limit=3", []string{"(Kagi)", "1. Kagi hit\n   https://k.example/\n   kagi snippet"}},
		{"olostep", "olo-key", "/olostep", "olostep task=go tips", []string{"(Olostep)", "1. Olostep answer", "Paris is the capital.", "2. Wiki\n   https://w.example/", "3. https://bare.example/"}},
		{"bocha", "bocha-key", "/bocha", "bocha q=go tips count=3", []string{"(Bocha)", "1. Bocha hit\n   https://b.example/\n   long summary"}},
		{"volcengine", "volc-key", "/volc", "volcengine q=go tips type=web count=3", []string{"(Volcengine)", "1. Volc hit\n   https://v.example/\n   volc summary"}},
		{"keenable", "keen-key", "/keenable", "keenable q=go tips", []string{"(Keenable)", "1. Keen hit\n   https://kn.example/\n   keen"}},
		{"keenable", "", "/keenable", "keenable-public q=go tips key=", []string{"(Keenable)", "1. Public hit\n   https://p.example/\n   public"}},
		{"serper", "serper-key", "/serper", "serper q=go tips num=3", []string{"(Serper)", "1. Serper hit\n   https://s.example/\n   serp"}},
		{"exa", "exa-key", "/exa", "exa q=go tips numResults=3", []string{"(Exa)", "1. Exa hit\n   https://e.example/\n   exa page text", "2. Exa second\n   https://e2.example/\n   a highlight"}},
	}
	for _, tt := range tests {
		t.Run(tt.provider+"/"+tt.key, func(t *testing.T) {
			got, err := runSearch(t, SearchOptions{Provider: tt.provider, APIKey: tt.key, BaseURL: srv.URL + tt.path}, map[string]any{"query": "go tips", "count": 3})
			if err != nil {
				t.Fatal(err)
			}
			if call := last(); call != tt.wantCall {
				t.Errorf("backend call = %q, want %q", call, tt.wantCall)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
		})
	}
}

func TestKeyedSearchErrors(t *testing.T) {
	srv, _ := keyedFake(t)
	for _, tt := range []struct{ provider, path, want string }{
		{"serper", "/serper", "HTTP 401"},
		{"volcengine", "/volc", "error InvalidAuth: bad key"},
		{"bocha", "/bocha", "HTTP 400"},
		{"exa", "/exa", "HTTP 401"},
	} {
		_, err := runSearch(t, SearchOptions{Provider: tt.provider, APIKey: "wrong", BaseURL: srv.URL + tt.path}, map[string]any{"query": "x"})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s with a wrong key: err = %v, want %q", tt.provider, err, tt.want)
		}
	}
	for _, p := range []string{"jina", "kagi", "olostep", "bocha", "volcengine", "serper"} {
		s, err := NewSearch(SearchOptions{Provider: p, Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		if s.Provider() != "DuckDuckGo" {
			t.Errorf("%s without a key uses %s, want the DuckDuckGo fallback", p, s.Provider())
		}
	}
}
