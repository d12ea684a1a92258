package kit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/internal/redact"
)

func TestDedup(t *testing.T) {
	d := NewDedup(3)
	for _, id := range []string{"a", "b", "c"} {
		if d.Seen(id) {
			t.Fatalf("%s seen before it was recorded", id)
		}
	}
	if !d.Seen("a") || !d.Seen("c") {
		t.Fatal("recent ids not remembered")
	}
	d.Seen("d") // evicts a
	if d.Seen("a") {
		t.Fatal("oldest id not evicted when full")
	}
	if d.Seen("") || d.Seen("") {
		t.Fatal("the empty id counts as a duplicate")
	}
	d.Forget("d")
	if d.Seen("d") {
		t.Fatal("forgotten id still remembered")
	}
	var zero Dedup
	var wg sync.WaitGroup
	var dups atomic.Int32
	for range 8 {
		wg.Go(func() {
			if zero.Seen("x") {
				dups.Add(1)
			}
		})
	}
	wg.Wait()
	if dups.Load() != 7 {
		t.Fatalf("%d of 8 concurrent callers saw a duplicate, want 7", dups.Load())
	}
}

func TestTokenCacheSingleFlightAndExpiry(t *testing.T) {
	var fetches atomic.Int32
	release := make(chan struct{})
	c := NewTokenCache(func(ctx context.Context) (string, time.Duration, error) {
		n := fetches.Add(1)
		<-release
		return fmt.Sprintf("tok%d", n), time.Hour, nil
	})
	now := time.Now()
	c.now = func() time.Time { return now }
	var wg sync.WaitGroup
	got := make([]string, 5)
	for i := range got {
		wg.Go(func() {
			tok, err := c.Get(context.Background())
			if err != nil {
				t.Error(err)
			}
			got[i] = tok
		})
	}
	// A caller that gives up does not cancel the refresh for the others.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Get(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller got %v", err)
	}
	close(release)
	wg.Wait()
	for _, tok := range got {
		if tok != "tok1" {
			t.Fatalf("callers got %v, want one shared fetch", got)
		}
	}
	if tok, _ := c.Get(context.Background()); tok != "tok1" || fetches.Load() != 1 {
		t.Fatalf("fresh token refetched: %s after %d fetches", tok, fetches.Load())
	}
	now = now.Add(55*time.Minute + time.Second) // within the 5 min margin
	if tok, _ := c.Get(context.Background()); tok != "tok2" {
		t.Fatalf("stale token kept: %s", tok)
	}
	c.Invalidate("tok1") // not current: no effect
	if tok, _ := c.Get(context.Background()); tok != "tok2" {
		t.Fatalf("invalidating an old token dropped the new one: %s", tok)
	}
	c.Invalidate("tok2")
	if tok, _ := c.Get(context.Background()); tok != "tok3" {
		t.Fatalf("invalidated token kept: %s", tok)
	}
}

func TestTokenCacheErrorsAreNotCached(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	c := NewTokenCache(func(ctx context.Context) (string, time.Duration, error) {
		if fail.Load() {
			return "", 0, errors.New("boom")
		}
		return "", time.Hour, nil
	})
	if _, err := c.Get(context.Background()); err == nil || err.Error() != "boom" {
		t.Fatalf("got %v", err)
	}
	fail.Store(false)
	if _, err := c.Get(context.Background()); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty token accepted: %v", err)
	}
}

func TestClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Token") != "tok-abcdef" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"errcode":42001,"errmsg":"token tok-abcdef expired"}`)
			return
		}
		switch r.URL.Path {
		case "/ok":
			fmt.Fprint(w, `{"errcode":0,"errmsg":"ok","value":7}`)
		case "/envelope":
			fmt.Fprint(w, `{"errcode":"40014","errmsg":"invalid access_token tok-abcdef"}`)
		case "/limited":
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
		case "/gone":
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, "no such chat")
		case "/big":
			fmt.Fprint(w, strings.Repeat("x", 100))
		default:
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	defer srv.Close()
	token := "tok-abcdef"
	red := redact.New(token)
	c := &Client{Base: srv.URL, Redact: red, MaxBody: 90, Check: Envelope("errcode", "errmsg"),
		Auth: func(ctx context.Context, r *http.Request) error { r.Header.Set("X-Token", token); return nil }}
	ctx := context.Background()
	var out struct{ Value int }
	if err := c.Do(ctx, "POST", "/ok", map[string]int{"a": 1}, &out); err != nil || out.Value != 7 {
		t.Fatalf("ok: %v %+v", err, out)
	}
	err := c.Do(ctx, "POST", "/envelope?access_token="+token, nil, nil)
	var ae *APIError
	if !errors.As(err, &ae) || ae.Code != "40014" || strings.Contains(err.Error(), token) {
		t.Fatalf("envelope error: %v", err)
	}
	var ra *channels.RetryAfterError
	if err := c.Do(ctx, "GET", "/limited", nil, nil); !errors.As(err, &ra) || ra.After != 3*time.Second {
		t.Fatalf("429: %v", err)
	}
	var perm *channels.PermanentError
	if err := c.Do(ctx, "GET", "/gone", nil, nil); !errors.As(err, &perm) || !strings.Contains(err.Error(), "no such chat") {
		t.Fatalf("404: %v", err)
	}
	if err := c.Do(ctx, "GET", "/bad", nil, nil); !errors.As(err, &ae) || ae.Status != 502 || errors.As(err, &perm) {
		t.Fatalf("502: %v", err)
	}
	if err := c.Do(ctx, "GET", "/big", nil, nil); err == nil || !strings.Contains(err.Error(), "larger") {
		t.Fatalf("cap: %v", err)
	}
	token = "other-token"
	err = c.Do(ctx, "GET", "/ok", nil, nil)
	if !Unauthorized(err) || !errors.As(err, &ae) || ae.Code != "42001" || strings.Contains(err.Error(), "tok-abcdef") {
		t.Fatalf("401: %v", err)
	}
	dead := &Client{Base: "http://127.0.0.1:1", Redact: red}
	if err := dead.Do(ctx, "GET", "/x?access_token=tok-abcdef", nil, nil); err == nil || strings.Contains(err.Error(), "tok-abcdef") {
		t.Fatalf("transport error leaks the query: %v", err)
	}
}

func TestDedupHas(t *testing.T) {
	d := NewDedup(2)
	if d.Has("a") {
		t.Fatal("Has(a) on an empty cache = true")
	}
	if d.Has("a") || d.Seen("a") {
		t.Fatal("Has must not record: Seen(a) after Has(a) = true, want false")
	}
	if !d.Has("a") {
		t.Fatal("Has(a) after Seen(a) = false")
	}
	d.Seen("b")
	d.Seen("c") // evicts a
	if d.Has("a") || !d.Has("b") || !d.Has("c") {
		t.Errorf("after evicting a: Has(a,b,c) = %v %v %v, want false true true", d.Has("a"), d.Has("b"), d.Has("c"))
	}
}

func TestTokenCacheHeader(t *testing.T) {
	tc := NewTokenCache(func(context.Context) (string, time.Duration, error) { return "tok-1", time.Hour, nil })
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	if err := tc.Header("Authorization", "QQBot ")(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if got := req.Header.Get("Authorization"); got != "QQBot tok-1" {
		t.Errorf("Authorization = %q, want %q", got, "QQBot tok-1")
	}
	failing := NewTokenCache(func(context.Context) (string, time.Duration, error) { return "", 0, errors.New("refused") })
	if err := failing.Header("X-Token", "")(t.Context(), httptest.NewRequest(http.MethodGet, "/", nil)); err == nil {
		t.Error("a token that cannot be fetched: want the error")
	}
}
