package webui

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// checkCounter counts the password checks that failed: each one, and only
// each one, logs "workbench: failed login".
type checkCounter struct{ n atomic.Int64 }

func (c *checkCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *checkCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "workbench: failed login" {
		c.n.Add(1)
	}
	return nil
}
func (c *checkCounter) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *checkCounter) WithGroup(string) slog.Handler      { return c }

// TestConcurrentLoginsCannotSlipPastTheLockout: 60 wrong passwords sent at
// once the moment a lock-out ends are not all checked (each is counted
// before its check, one check at a time per client), so the right password
// is still refused until the next lock-out ends.
func TestConcurrentLoginsCannotSlipPastTheLockout(t *testing.T) {
	checks := &checkCounter{}
	b := newBench(t, false, true, func(o *Options) { o.Log = slog.New(checks) })
	for range freeFailures + 1 {
		if code, _, _ := b.login("nope nope nope"); code != 401 {
			t.Fatalf("setting up the lock-out: %d", code)
		}
	}
	if code, _, _ := b.login(testPassword); code != 429 {
		t.Fatalf("right password while locked out: %d, want 429", code)
	}
	b.clock.Add(1100 * time.Millisecond) // the lock-out has just ended
	before := checks.n.Load()

	var wg sync.WaitGroup
	codes := make([]int, 60)
	start := make(chan struct{})
	for i := range codes {
		wg.Go(func() {
			<-start
			codes[i], _, _ = b.login("nope nope nope")
		})
	}
	close(start)
	wg.Wait()
	tally := map[int]int{}
	for _, c := range codes {
		tally[c]++
	}
	checked := checks.n.Load() - before
	if checked > 3 || tally[401] != int(checked) || tally[429] != 60-int(checked) {
		t.Errorf("60 concurrent wrong logins: statuses %v, %d checked; want at most a handful checked and the rest refused unchecked (429)", tally, checked)
	}
	// The right password, before the new lock-out ends (2 s from its
	// start): refused without a check.
	b.clock.Add(1900 * time.Millisecond)
	if code, body, _ := b.login(testPassword); code != 429 {
		t.Fatalf("right password before the lock-out ends: %d %v, want 429", code, body)
	}
	b.clock.Add(200 * time.Millisecond)
	if code, body, _ := b.login(testPassword); code != 200 {
		t.Fatalf("right password after the lock-out: %d %v, want 200", code, body)
	}
}

// TestIPv6LockoutCoversTheSlash64: one host holds a whole /64; rotating
// through it does not reset the count.
func TestIPv6LockoutCoversTheSlash64(t *testing.T) {
	b := newBench(t, false, true)
	mux := http.NewServeMux()
	b.server.Mount(mux)
	login := func(remote, pw string) int {
		req := httptest.NewRequest("POST", "/api/login", strings.NewReader(`{"password":"`+pw+`"}`))
		req.RemoteAddr = remote
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		return rec.Code
	}
	for i := range freeFailures + 1 {
		remote := "[2001:db8:1:2::" + string(rune('a'+i)) + "]:4000"
		if code := login(remote, "nope nope nope"); code != 401 {
			t.Fatalf("failure %d from %s: %d", i, remote, code)
		}
	}
	if code := login("[2001:db8:1:2:ffff:ffff:ffff:1]:4000", testPassword); code != 429 {
		t.Errorf("another address of the same /64: %d, want 429 (locked out)", code)
	}
	if code := login("[2001:db8:1:3::1]:4000", testPassword); code != 200 {
		t.Errorf("an address of another /64: %d, want 200", code)
	}
	if code := login("192.0.2.7:4000", testPassword); code != 200 {
		t.Errorf("an IPv4 client: %d, want 200", code)
	}
}

func TestClientKey(t *testing.T) {
	for remote, want := range map[string]string{
		"192.0.2.7:1":                  "192.0.2.7",
		"[::ffff:192.0.2.7]:1":         "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:1":     "2001:db8:1:2::/64",
		"[fe80::1%eth0]:1":             "fe80::/64",
		"not an address":               "not an address",
		"[2001:db8:1:2::ffff:1]:65535": "2001:db8:1:2::/64",
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		if got := clientKey(r); got != want {
			t.Errorf("clientKey(%q) = %q, want %q", remote, got, want)
		}
	}
}

// TestLockoutMessageMatchesRetryAfter: the message names the same whole
// number of seconds as Retry-After, rounded up: never "try again in 0s"
// while the header says 1.
func TestLockoutMessageMatchesRetryAfter(t *testing.T) {
	b := newBench(t, false, true)
	for range freeFailures + 1 {
		if code, _, _ := b.login("nope nope nope"); code != 401 {
			t.Fatalf("setting up the lock-out: %d", code)
		}
	}
	// The lock-out is 1 s from the last failure.
	for _, tc := range []struct {
		name    string
		advance time.Duration
		want    string
	}{
		{"at its start", 0, "1"},
		{"0.6 s in", 600 * time.Millisecond, "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b.clock.Add(tc.advance)
			code, body, resp := b.login(testPassword)
			if code != 429 {
				t.Fatalf("while locked out: %d %v, want 429", code, body)
			}
			if got := resp.Header.Get("Retry-After"); got != tc.want {
				t.Errorf("Retry-After = %q, want %q", got, tc.want)
			}
			if msg, _ := body["error"].(string); !strings.HasSuffix(msg, "try again in "+tc.want+"s") {
				t.Errorf("message %q, want it to end in %q", msg, "try again in "+tc.want+"s")
			}
		})
	}
}
