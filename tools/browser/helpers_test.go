package browser

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/testproc"
	"github.com/nanobot-go/nanobot/tools"
)

// chromium returns the browser binary, skipping the test when there is
// none (CI installs Debian's chromium, so there it must exist).
func chromium(t *testing.T) string {
	t.Helper()
	p, err := Find("")
	if err == nil {
		return p
	}
	testproc.Missing(t, "no chromium on this machine (.ci/run installs it)")
	return ""
}

// site is the address tests serve their pages on: 127.0.0.2, which Linux
// routes to loopback like 127.0.0.1, so a test can allow exactly it and
// still see loopback (127.0.0.1) refused.
const site = "127.0.0.2"

var siteOnly = []netip.Prefix{netip.MustParsePrefix(site + "/32")}

// serve serves h on host (an address of the loopback) and returns the
// base URL.
func serve(t *testing.T, host string, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", host, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	return "http://" + ln.Addr().String()
}

// newBrowser builds a Browser allowing allow, closed when the test ends.
func newBrowser(t *testing.T, allow []netip.Prefix, edit ...func(*Options)) *Browser {
	t.Helper()
	o := Options{ExecPath: chromium(t), ProfileDir: t.TempDir(), OutDir: t.TempDir(), Allow: allow, ActionTimeout: 60 * time.Second}
	for _, e := range edit {
		e(&o)
	}
	b, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// session is the context of a tool call in conversation key.
func session(key string) context.Context {
	return tools.WithCallContext(context.Background(), tools.CallContext{SessionKey: key})
}

// run calls the tool and fails the test on an error.
func run(t *testing.T, ctx context.Context, tool *Tool, args map[string]any) tools.Result {
	t.Helper()
	res, err := tool.Execute(ctx, args)
	if err != nil {
		t.Fatalf("browser %v: %v", args, err)
	}
	return res
}

// refOf finds the reference a snapshot gave the element matching
// pattern (a regular expression after the reference, like `button "Go"`).
func refOf(t *testing.T, snap, pattern string) string {
	t.Helper()
	m := regexp.MustCompile(`\[(e\d+) ` + pattern).FindStringSubmatch(snap)
	if m == nil {
		t.Fatalf("no element %s in the snapshot:\n%s", pattern, snap)
	}
	return m[1]
}
