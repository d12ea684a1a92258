package browser

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nanobot-go/nanobot/tools/web"
)

// TestEgressDialsOnlyCheckedAddresses: the proxy Chromium goes through
// resolves names itself and dials what it checked, so a name that
// resolves to loopback (DNS rebinding) is refused over plain HTTP and
// over CONNECT, while an allowed address works both ways.
func TestEgressDialsOnlyCheckedAddresses(t *testing.T) {
	var innerHits atomic.Int32
	inner := serve(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { innerHits.Add(1) }))
	innerPort := inner[strings.LastIndex(inner, ":")+1:]
	plain := serve(t, site, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Forwarded-For") != "" {
			t.Errorf("the proxy told the site X-Forwarded-For %q", r.Header.Get("X-Forwarded-For"))
		}
		fmt.Fprint(w, "plain ok")
	}))
	plainPort := plain[strings.LastIndex(plain, ":")+1:]
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "tls ok") }))
	ln, err := net.Listen("tcp", site+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", site, err)
	}
	tlsSrv.Listener = ln
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	tlsPort := tlsSrv.Listener.Addr().(*net.TCPAddr).Port

	names := map[string]string{"rebind.example": "127.0.0.1", "shop.example.com": site}
	guard := &web.SSRFGuard{Allow: siteOnly, LookupNetIP: func(_ context.Context, _, host string) ([]netip.Addr, error) {
		if a, ok := names[host]; ok {
			return []netip.Addr{netip.MustParseAddr(a)}, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}}
	eg, err := startEgress(guard, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer eg.Close()
	tr := tlsSrv.Client().Transport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: eg.addr()})
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	get := func(u string) (int, string, error) {
		resp, err := client.Get(u)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), nil
	}
	if code, body, err := get("http://shop.example.com:" + plainPort + "/"); err != nil || code != 200 || body != "plain ok" {
		t.Errorf("allowed plain request: %d %q %v", code, body, err)
	}
	if code, body, err := get(fmt.Sprintf("https://shop.example.com:%d/", tlsPort)); err != nil || code != 200 || body != "tls ok" {
		t.Errorf("allowed tunnel: %d %q %v", code, body, err)
	}
	if code, body, _ := get("http://rebind.example:" + innerPort + "/"); code != http.StatusForbidden || !strings.Contains(body, "loopback") {
		t.Errorf("rebinding name over plain HTTP: %d %q, want 403 naming loopback", code, body)
	}
	if _, _, err := get("https://rebind.example:" + innerPort + "/"); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("rebinding name over CONNECT: %v, want the proxy's 403", err)
	}
	if code, _, _ := get(inner + "/"); code != http.StatusForbidden {
		t.Errorf("loopback literal: %d, want 403", code)
	}
	if n := innerHits.Load(); n != 0 {
		t.Errorf("the loopback server was reached %d times", n)
	}
}
