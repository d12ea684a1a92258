package webui

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
)

// TestDeleteGoesThroughReset: DELETE hands the conversation to
// Options.Reset (the /new path), and a busy conversation is refused with
// 409 on the key and stays.
func TestDeleteGoesThroughReset(t *testing.T) {
	var (
		mu    sync.Mutex
		reset []string
		busy  = true
	)
	var b *bench
	b = newBench(t, true, false, func(o *Options) {
		o.Reset = func(ctx context.Context, key string) error {
			mu.Lock()
			defer mu.Unlock()
			if busy {
				return fmt.Errorf("%w: a turn is running", ErrBusy)
			}
			reset = append(reset, key)
			sess, err := b.store.Load(ctx, key)
			if err != nil {
				return err
			}
			return b.store.Archive(ctx, sess)
		}
	})
	b.seed(t)
	key := "/api/sessions/" + url.PathEscape("telegram:42")
	hdr := map[string]string{"X-CSRF-Token": b.csrf()}

	if code, body, _ := b.do("DELETE", key, "", hdr); code != http.StatusConflict || body["path"] != "key" {
		t.Fatalf("delete while busy: %d %v, want 409 on path key", code, body)
	}
	if code, _, _ := b.do("GET", key, "", nil); code != 200 {
		t.Fatalf("after a refused delete: %d, want the conversation still there", code)
	}
	mu.Lock()
	busy = false
	mu.Unlock()
	if code, body, _ := b.do("DELETE", key, "", hdr); code != 200 || body["archived"] != "telegram:42" {
		t.Fatalf("delete: %d %v", code, body)
	}
	mu.Lock()
	got := append([]string(nil), reset...)
	mu.Unlock()
	if len(got) != 1 || got[0] != "telegram:42" {
		t.Errorf("Reset called with %v, want [telegram:42]", got)
	}
	if code, _, _ := b.do("GET", key, "", nil); code != 404 {
		t.Errorf("after delete: %d, want 404", code)
	}
}

// TestSignedIn: the web chat's login check accepts exactly a live login
// cookie: not before the login, not after it expired or was logged out of,
// and never from a workbench that is off.
func TestSignedIn(t *testing.T) {
	b := newBench(t, false, true)
	u, _ := url.Parse(b.srv.URL + "/ws")
	signedIn := func() bool {
		r, _ := http.NewRequest("GET", u.String(), nil)
		for _, c := range b.hc.Jar.Cookies(u) {
			r.AddCookie(c)
		}
		return b.server.SignedIn(r)
	}
	if signedIn() {
		t.Fatal("signed in before the login")
	}
	if code, _, _ := b.login(testPassword); code != 200 {
		t.Fatalf("login: %d", code)
	}
	if !signedIn() {
		t.Fatal("not signed in after the login")
	}
	forged, _ := http.NewRequest("GET", u.String(), nil)
	forged.AddCookie(&http.Cookie{Name: cookieName, Value: randomToken()})
	if b.server.SignedIn(forged) {
		t.Error("a made-up cookie signed in")
	}
	b.clock.Add(loginTTL + 1)
	if signedIn() {
		t.Error("still signed in after the login expired")
	}
	if code, _, _ := b.login(testPassword); code != 200 {
		t.Fatalf("login again: %d", code)
	}
	if code, _, _ := b.do("POST", "/api/logout", "", map[string]string{"X-CSRF-Token": b.csrf()}); code != 200 {
		t.Fatalf("logout: %d", code)
	}
	if signedIn() {
		t.Error("still signed in after logging out")
	}

	off, err := New(Options{Loopback: false})
	if err != nil || off.Off() == nil {
		t.Fatalf("a workbench beyond loopback without a password: %v, off %v", err, off.Off())
	}
	if off.SignedIn(forged) {
		t.Error("a workbench that is off signed somebody in")
	}
}

// TestEveryEndpointNeedsLoginAndCSRF: beyond loopback, every endpoint of
// the API answers 401 without a login, and after it every state change
// without the CSRF token answers 403 and changes nothing.
func TestEveryEndpointNeedsLoginAndCSRF(t *testing.T) {
	b := newBench(t, false, true)
	b.seed(t)
	endpoints := []struct{ method, path, body string }{
		{"POST", "/api/logout", ""},
		{"GET", "/api/sessions", ""},
		{"GET", "/api/sessions/telegram%3A42", ""},
		{"PATCH", "/api/sessions/telegram%3A42", `{"title":"x"}`},
		{"DELETE", "/api/sessions/telegram%3A42", ""},
		{"GET", "/api/channels", ""},
		{"POST", "/api/pairing/ABCD1234/approve", ""},
		{"POST", "/api/pairing/ABCD1234/deny", ""},
		{"DELETE", "/api/pairing/approved/telegram/42", ""},
		{"GET", "/api/cron", ""},
		{"POST", "/api/cron", `{}`},
		{"PATCH", "/api/cron/job1", `{"enabled":false}`},
		{"POST", "/api/cron/job1/run", ""},
		{"DELETE", "/api/cron/job1", ""},
		{"GET", "/api/heartbeat", ""},
		{"PUT", "/api/heartbeat", `{"content":"x"}`},
		{"GET", "/api/settings", ""},
		{"PATCH", "/api/settings", `{"changes":[]}`},
		{"GET", "/api/memory", ""},
		{"PUT", "/api/memory", `{"content":"x"}`},
		{"GET", "/api/skills", ""},
		{"GET", "/api/logs", ""},
		{"GET", "/api/no-such-endpoint", ""},
	}
	for _, e := range endpoints {
		if code, body, _ := b.do(e.method, e.path, e.body, nil); code != http.StatusUnauthorized {
			t.Errorf("%s %s before login: %d %v, want 401", e.method, e.path, code, body)
		}
	}
	if code, _, _ := b.login(testPassword); code != 200 {
		t.Fatalf("login: %d", code)
	}
	for _, e := range endpoints {
		if e.method == "GET" {
			continue
		}
		if code, body, _ := b.do(e.method, e.path, e.body, nil); code != http.StatusForbidden {
			t.Errorf("%s %s without the CSRF token: %d %v, want 403", e.method, e.path, code, body)
		}
	}
	if code, body, _ := b.do("GET", "/api/sessions/telegram%3A42", "", nil); code != 200 || body["session"].(map[string]any)["title"] == "x" {
		t.Errorf("the conversation after the refused changes: %d %v, want it unchanged", code, body)
	}
}
