package channels

import (
	"net"
	"net/http"
	"net/url"
	"strings"
)

// HostName returns the host part of a Host header or URL authority
// ("Example.COM:8080" -> "example.com", "[::1]:80" -> "::1"): lower case,
// without port, brackets or one trailing dot. Safe for any input.
func HostName(hostport string) string {
	h := strings.TrimSpace(hostport)
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// IsLoopbackHost reports whether a host name (see HostName) can only mean
// this machine: "localhost", a name under ".localhost" (RFC 6761: browsers
// resolve these to loopback without asking DNS, so a rebinding attacker
// cannot own one), or a loopback IP literal (127.0.0.0/8, ::1). A DNS name
// that merely resolves to 127.0.0.1 is not loopback: that is the rebinding
// attack.
func IsLoopbackHost(name string) bool {
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// IsLoopbackPeer reports whether an http.Request.RemoteAddr is a loopback
// address.
func IsLoopbackPeer(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// GenuineLoopback reports whether r comes from a browser (or a script) on
// this machine that asked for a loopback name: the peer is loopback, the
// Host is a loopback name, no proxy header is present, and the Origin, when
// sent, is a loopback page. A page on another site whose name was
// re-pointed at 127.0.0.1 (DNS rebinding) or a reverse proxy on the same
// machine is not. Callers must also know that their server listens on
// loopback only.
func GenuineLoopback(r *http.Request) bool {
	if !IsLoopbackPeer(r.RemoteAddr) || !IsLoopbackHost(HostName(r.Host)) {
		return false
	}
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Real-Ip"} {
		if r.Header.Get(h) != "" {
			return false
		}
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true // not a browser page (curl, a script on this machine)
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && IsLoopbackHost(HostName(u.Host))
}
