package providers

import (
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// ProxyClient is an HTTP client that sends every request through proxy
// (http://, https:// or socks5://). The transport keeps the defaults of
// http.DefaultTransport otherwise.
func ProxyClient(proxy string) (*http.Client, error) {
	u, err := url.Parse(proxy)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("invalid proxy URL (want http://, https:// or socks5://host:port)")
	}
	switch u.Scheme {
	case "http", "https", "socks5", "socks5h":
	default:
		return nil, fmt.Errorf("proxy scheme %q not supported (want http, https or socks5)", u.Scheme)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(u)
	// A server that accepts the connection but never answers is caught by
	// the request/idle timeouts; this bounds the header phase too.
	tr.ResponseHeaderTimeout = 5 * time.Minute
	return &http.Client{Transport: tr}, nil
}
