package web

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"
)

// maxRedirects is how many redirects web_fetch follows, each re-checked.
const maxRedirects = 5

// guardedTransport checks every request it sends (the first and each
// redirect) before the underlying transport dials.
type guardedTransport struct {
	base  http.RoundTripper
	guard *SSRFGuard
	// resolve makes the check resolve host names too. It is needed with a
	// proxy, where the dial goes to the proxy and cannot check the target.
	resolve bool
}

func (t *guardedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var err error
	if t.resolve {
		err = t.guard.CheckURL(req.Context(), req.URL)
	} else {
		err = t.guard.CheckURLSyntax(req.URL)
	}
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	return t.base.RoundTrip(req)
}

// newGuardedClient returns a client whose every connection passes guard.
// Without a proxy the guard also dials (pinning the checked address, so DNS
// rebinding cannot redirect the connection); with a proxy the target is
// resolved and checked before each request, and the proxy resolves it
// again, which a hostile DNS server could exploit: prefer no proxy where
// that matters. Environment proxy variables are ignored.
func newGuardedClient(guard *SSRFGuard, proxy string, timeout time.Duration) (*http.Client, error) {
	tr := &http.Transport{
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          20,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
	}
	rt := &guardedTransport{base: tr, guard: guard}
	if proxy != "" {
		pu, err := parseProxy(proxy)
		if err != nil {
			return nil, err
		}
		tr.Proxy = http.ProxyURL(pu)
		tr.DialContext = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
		rt.resolve = true
	} else {
		tr.DialContext = guard.DialContext
	}
	return &http.Client{
		Transport: rt,
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			return guard.CheckURLSyntax(req.URL)
		},
	}, nil
}

// newPlainClient is for configured endpoints (search backends), which may
// well be on the LAN; it honours only the configured proxy.
func newPlainClient(proxy string, timeout time.Duration) (*http.Client, error) {
	tr := &http.Transport{ForceAttemptHTTP2: true, TLSHandshakeTimeout: 10 * time.Second}
	if proxy != "" {
		pu, err := parseProxy(proxy)
		if err != nil {
			return nil, err
		}
		tr.Proxy = http.ProxyURL(pu)
	}
	return &http.Client{Transport: tr, Timeout: timeout}, nil
}

func parseProxy(proxy string) (*url.URL, error) {
	pu, err := url.Parse(proxy)
	if err != nil || pu.Host == "" {
		return nil, fmt.Errorf("web: invalid proxy URL %q", proxy)
	}
	switch pu.Scheme {
	case "http", "https", "socks5", "socks5h":
		return pu, nil
	}
	return nil, fmt.Errorf("web: proxy %q: scheme must be http, https or socks5", proxy)
}
