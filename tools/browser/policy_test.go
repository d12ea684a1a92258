package browser

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestRedirectsToPrivateAddressesRefused is the acceptance case: the
// browser may reach the test site (127.0.0.2, allowlisted) but not
// loopback (127.0.0.1) nor the cloud metadata address, whether the model
// asks for them, a redirect leads there, or a page loads from there.
func TestRedirectsToPrivateAddressesRefused(t *testing.T) {
	var hits atomic.Int32
	inner := serve(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "internal admin page")
	}))
	mux := http.NewServeMux()
	mux.HandleFunc("/to-loopback", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, inner+"/admin", http.StatusFound)
	})
	mux.HandleFunc("/to-metadata", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
	})
	mux.HandleFunc("/hop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/to-loopback", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/embeds", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<title>loading</title><img src="%s/pixel" onerror="document.title='image refused'" onload="document.title='image loaded'">`, inner)
	})
	mux.HandleFunc("/fetches", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<title>loading</title><script>fetch(%q).then(() => document.title = "fetched", () => document.title = "fetch refused")</script>`, inner+"/api")
	})
	base := serve(t, site, mux)
	b := newBrowser(t, siteOnly)
	tool := b.Tool("ws")
	ctx := session("s")

	for _, tc := range []struct{ path, reason string }{
		{"/to-loopback", "loopback address"},
		{"/to-metadata", "link-local address"},
		{"/hop", "loopback address"},
	} {
		_, err := tool.Execute(ctx, map[string]any{"action": "navigate", "url": base + tc.path})
		var refused *RefusedError
		if !errors.As(err, &refused) || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("navigate %s: got %v, want a refusal naming %q", tc.path, err, tc.reason)
		}
	}
	for _, raw := range []string{inner + "/", "http://169.254.169.254/", "http://[::1]/", "file:///etc/passwd", "chrome://settings", "data:text/html,<h1>x</h1>", "javascript:alert(1)"} {
		if _, err := tool.Execute(ctx, map[string]any{"action": "navigate", "url": raw}); err == nil {
			t.Errorf("navigate %s was allowed", raw)
		}
	}

	// Subresources: the page loads, its request to loopback fails.
	for path, want := range map[string]string{"/embeds": "image refused", "/fetches": "fetch refused"} {
		run(t, ctx, tool, map[string]any{"action": "navigate", "url": base + path})
		if snap := run(t, ctx, tool, map[string]any{"action": "snapshot"}).Content; !strings.Contains(snap, "Page: "+want) {
			t.Errorf("%s: the page's title says the request was not refused:\n%s", path, snap)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback server was reached %d times", n)
	}
}
